package controlplane

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/node/workerapi"
)

type metrics struct {
	registrations   *prometheus.CounterVec
	heartbeats      *prometheus.CounterVec
	transitions     *prometheus.CounterVec
	workers         *prometheus.GaugeVec
	registryWrites  *prometheus.CounterVec
	registryRecords prometheus.Counter
	heldRefused     *prometheus.CounterVec
	historyRefused  *prometheus.CounterVec
	callsRefused    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_worker_registrations_total",
			Help: "Worker registration attempts by result (ok, superseded, unauthorized, bad_request, full: a new name past queryflux.registry.maxWorkers).",
		}, []string{"result"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_worker_heartbeats_total",
			Help: "Worker heartbeats by result (ok, unauthorized, bad_request, replayed: a sequence number not after the last kept for its session). Every refused one is in the log's rate-limited \"worker heartbeats refused\" line.",
		}, []string{"result"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_worker_transitions_total",
			Help: "Worker registry state changes made by the reaper, by new state.",
		}, []string{"state"}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "queryflux_controlplane_workers",
			Help: "Known workers by registry state.",
		}, []string{"state"}),
		registryWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_registry_batches_total",
			Help: "Worker registry batch writes by result.",
		}, []string{"result"}),
		registryRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queryflux_controlplane_registry_records_written_total",
			Help: "Worker records written to the registry store.",
		}),
		heldRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_held_requests_refused_total",
			Help: "Requests the control plane would hold open (config long-polls, contention watches) refused because their worker already held HeldPerWorkerMax of that kind.",
		}, []string{"kind"}),
		historyRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_history_records_refused_total",
			Help: "History records refused (the rest of each batch is stored), by reason: foreign-id (another worker recorded the query id first), not-given (the record names a cluster, group or user the worker was not given), nul-byte (its query id or a name holds a NUL byte).",
		}, []string{"reason"}),
		callsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_controlplane_worker_requests_refused_total",
			Help: "Requests to the worker endpoints other than register and heartbeat refused before their handler, by endpoint and reason (unauthorized: a token no session has; bad_request: a history batch that is not one). Every one is in the log's rate-limited \"worker requests refused\" line; lease refusals past authentication are in queryflux_capacity_refused_total.",
		}, []string{"endpoint", "reason"}),
	}
	for _, state := range []string{workerapi.StateHealthy, workerapi.StateStale, workerapi.StateEvicted} {
		m.workers.WithLabelValues(state).Set(0) // every state shows, even when empty
	}
	if reg != nil {
		reg.MustRegister(m.registrations, m.heartbeats, m.transitions, m.workers, m.registryWrites, m.registryRecords, m.heldRefused, m.historyRefused, m.callsRefused)
	}
	return m
}

package controlplane

// This file mounts the query history:
// POST /worker/history takes a worker's QueryRecordBatchV1 into the history store, stamped with
// the worker its session token belongs to, less the records naming what the worker was not given
// (the gate ConfigServer.Mount sets, history_given.go); GET /admin/queries reads it back behind the admin
// token. Refused records (a query id another worker recorded first, a name not given) are counted
// in queryflux_controlplane_history_records_refused_total{reason}.

import (
	"github.com/queryflux/queryflux/internal/history"
)

// MountHistory serves the history endpoints of cp on store: history.NewMemory in the simulator
// and the standalone role, pghistory.New(pool) on a real control plane.
func (cp *ControlPlane) MountHistory(store history.Store) {
	ingest := history.NewIngest(store, cp.AuthWorker, cp.e.Logger()).Clock(cp.e.Now).
		OnRefused(func(reason string, n int) { cp.metrics.historyRefused.WithLabelValues(reason).Add(float64(n)) }).
		OnBatchRefused(func(worker, reason string, err error) {
			cp.noteRefusedCall("POST "+history.PathWorkerHistory, reason, worker, err)
		}).
		Gate(cp.historyGate)
	cp.Handle("POST "+history.PathWorkerHistory, ingest)
	cp.HandleAdmin("GET "+history.PathAdminQueries, history.NewAdmin(store))
}

// historyGate is the gate ConfigServer.Mount set, read at each batch (the history may be mounted
// first); without one every record passes.
func (cp *ControlPlane) historyGate(worker string) func(*history.Record) error {
	cp.mu.Lock()
	gate := cp.gate
	cp.mu.Unlock()
	if gate == nil {
		return func(*history.Record) error { return nil }
	}
	return gate(worker)
}

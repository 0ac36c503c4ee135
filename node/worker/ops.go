package worker

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Status is what /worker/status shows. It never carries a credential.
type Status struct {
	Name                  string                 `json:"name"`
	Version               string                 `json:"version"`
	Labels                map[string]string      `json:"labels"`
	Frontends             []string               `json:"frontends"`
	ControlPlaneURL       string                 `json:"controlPlaneUrl"`
	Registered            bool                   `json:"registered"`
	RegisteredAt          time.Time              `json:"registeredAt,omitzero"`
	Registrations         int                    `json:"registrations"`
	HeartbeatIntervalSecs float64                `json:"heartbeatIntervalSecs"`
	HeartbeatSeq          uint64                 `json:"heartbeatSeq"`
	LastHeartbeatSentAt   time.Time              `json:"lastHeartbeatSentAt,omitzero"`
	LastHeartbeatAckAt    time.Time              `json:"lastHeartbeatAckAt,omitzero"`
	RegistryState         string                 `json:"registryState,omitempty"`
	CurrentRevision       string                 `json:"currentRevision,omitempty"`
	ConsecutiveFailures   int                    `json:"consecutiveFailures"`
	LastError             string                 `json:"lastError,omitempty"`
	Health                workerapi.HealthStatus `json:"health"`
	Ready                 bool                   `json:"ready"`
	NotReady              []string               `json:"notReady,omitempty"`
	// Peers is the last peer list from the control plane: what the worker routes and forwards by.
	Peers []workerapi.Peer `json:"peers"`
	// The sections other subsystems contribute to heartbeats, as the next heartbeat would carry them.
	Revision     workerapi.RevisionStatus     `json:"revision"`
	Config       workerapi.ConfigStatus       `json:"config"`
	Coordination workerapi.CoordinationStatus `json:"coordination"`
	History      workerapi.HistoryCounters    `json:"history"`
}

// Status returns the worker's view of itself.
func (w *Worker) Status() Status {
	notReady := w.notReady()
	sections := w.contributed()
	w.mu.Lock()
	defer w.mu.Unlock()
	return Status{
		Revision: sections.Revision, Config: sections.Config, Coordination: sections.Coordination,
		History: sections.History,
		Name:    w.cfg.Name, Version: w.cfg.Version, Labels: orEmpty(maps.Clone(w.cfg.Labels)),
		Frontends: append([]string{}, w.cfg.Frontends...), ControlPlaneURL: w.base.Redacted(),
		Registered: w.token != "", RegisteredAt: w.registeredAt, Registrations: w.registrations,
		HeartbeatIntervalSecs: w.interval.Seconds(), HeartbeatSeq: w.seq,
		LastHeartbeatSentAt: w.lastSentAt, LastHeartbeatAckAt: w.lastAckAt,
		RegistryState: w.lastAck.State, CurrentRevision: w.lastAck.CurrentRevision,
		ConsecutiveFailures: w.failures, LastError: w.lastError, Health: w.health.Status(),
		Ready: len(notReady) == 0, NotReady: notReady, Peers: append([]workerapi.Peer{}, w.peers...),
	}
}

// notReady lists why the worker should not take traffic: its self-health, then every
// readiness check that fails.
func (w *Worker) notReady() []string {
	w.mu.Lock()
	healthy := w.health.State == workerapi.HealthHealthy
	lag := w.health.LastLag
	checks := slices.Clone(w.readiness)
	w.mu.Unlock()
	var out []string
	if !healthy {
		out = append(out, fmt.Sprintf("self-health: unhealthy (loop lag %v)", lag))
	}
	for _, c := range checks {
		if err := c.check(); err != nil {
			out = append(out, c.name+": "+w.redact(err.Error()))
		}
	}
	return out
}

// OpsHandler serves /health (alive), /readyz (503 while unhealthy or not ready), /metrics and
// /worker/status.
//
// The routes are put together at the first request: a simulated fleet builds thousands of
// workers whose ops listener nobody may ask, and building each mux (with its /metrics handler)
// was 8 % of a 1,000-worker fleet's boot, and memory every worker kept.
func (w *Worker) OpsHandler() http.Handler {
	w.mu.Lock()
	routes := slices.Clone(w.opsRoutes)
	w.mu.Unlock()
	return &opsHandler{w: w, routes: routes}
}

type opsHandler struct {
	w      *Worker
	routes []opsRoute
	once   sync.Once
	mux    *http.ServeMux
}

func (h *opsHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h.once.Do(func() { h.mux, h.routes = h.w.opsMux(h.routes), nil })
	h.mux.ServeHTTP(rw, r)
}

func (w *Worker) opsMux(routes []opsRoute) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(rw http.ResponseWriter, r *http.Request) {
		workerapi.WriteJSON(rw, http.StatusOK, "application/json", map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, r *http.Request) {
		if reasons := w.notReady(); len(reasons) > 0 {
			workerapi.WriteJSON(rw, http.StatusServiceUnavailable, "application/json", map[string]any{"ready": false, "reasons": reasons})
			return
		}
		workerapi.WriteJSON(rw, http.StatusOK, "application/json", map[string]any{"ready": true})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.cfg.Metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+workerapi.PathWorkerStatus, func(rw http.ResponseWriter, r *http.Request) {
		workerapi.WriteJSON(rw, http.StatusOK, workerapi.MediaWorkerStatus, w.Status())
	})
	for _, r := range routes {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}

// HandleOps adds an endpoint to the ops listener (e.g. the peer-config endpoint). It must be
// called before OpsHandler.
func (w *Worker) HandleOps(pattern string, h http.Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opsRoutes = append(w.opsRoutes, opsRoute{pattern, h})
}

// Metrics is the registry /metrics serves; other subsystems of the worker register here.
func (w *Worker) Metrics() *prometheus.Registry { return w.cfg.Metrics }

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

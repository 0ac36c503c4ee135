package controlplane

// This file mounts the query history:
// POST /worker/history takes a worker's QueryRecordBatchV1 into the history store, stamped with
// the worker its session token belongs to; GET /admin/queries reads it back behind the admin
// token. Records refused for a query id another worker recorded first are counted in
// queryflux_controlplane_history_records_refused_total.

import (
	"github.com/queryflux/queryflux/internal/history"
)

// MountHistory serves the history endpoints of cp on store: history.NewMemory in the simulator
// and the standalone role, pghistory.New(pool) on a real control plane.
func (cp *ControlPlane) MountHistory(store history.Store) {
	ingest := history.NewIngest(store, cp.AuthWorker, cp.e.Logger()).Clock(cp.e.Now).
		OnRefused(func(n int) { cp.metrics.historyRefused.Add(float64(n)) })
	cp.Handle("POST "+history.PathWorkerHistory, ingest)
	cp.HandleAdmin("GET "+history.PathAdminQueries, history.NewAdmin(store))
}

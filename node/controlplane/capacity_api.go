package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// CapacityConfig wires capacity leases into a control plane.
type CapacityConfig struct {
	Store   capacity.CapacityStore    // pgcapacity.New(pool) in production, capacity.NewMemory() in the simulator
	Locks   capacity.SweepCoordinator // usually the same value as Store
	Metrics *capacity.Metrics         // may be nil
	// Owner is this replica's name: the owner of the stale-lease sweep lock.
	Owner string
	// SweepEvery is how often the sweeper looks for leases whose renewals stopped (default 5 s).
	SweepEvery time.Duration
	// Ordered is coordination.queue: ordered: acquires that may wait are granted in arrival order.
	Ordered bool
	// Weights (coordination.weights, ordered queue only) are per-worker weights, 1 to 100 (a
	// worker not listed weighs 1): waiting workers are granted in weighted fair order instead of
	// arrival order, each one's share approaching its weight's share. Nil keeps arrival order.
	Weights map[string]int
	// Limits makes the control plane the authority on every lease: each cluster's cap and lease
	// TTL come from its own configuration, and an unknown cluster is refused. Nil takes the
	// workers' word (tests that predate it).
	Limits capacity.Limits
	// Fence stops a revoked lease's work on its engine before its slot is freed; FenceGrace is
	// how long a fence that cannot confirm holds the slot (capacity.Sweeper).
	Fence      capacity.EngineFence
	FenceGrace time.Duration
	// StatsEvery is how often GET PathAdminCapacityStats's samples are taken (by
	// ControlPlane.StartCapacityStats); 0: one is taken on each call instead.
	StatsEvery time.Duration
	// Served reports whether the control plane gives worker the cluster (in the snapshot
	// filtered for its labels: ConfigServer.Serves); an acquire of one it is not given is
	// refused 403. Nil: every worker may take leases of every cluster.
	Served func(worker, cluster string) bool
	// NoContentionWatch leaves capacity.PathWatch unmounted, as on a control plane that
	// predates it: workers fall back to renewal checks. Only tests of that fallback set it
	// (assembly.TestNoContentionWatchEnv).
	NoContentionWatch bool
}

// Admin API paths of the capacity leases.
const (
	PathAdminLeases      = "/admin/leases"        // GET ?cluster=NAME
	PathAdminLeaseRevoke = "/admin/leases/revoke" // POST RevokeRequest
)

// RevokeRequest names the lease an operator revokes: "<cluster>#<generation>".
type RevokeRequest struct {
	Lease string `json:"lease"`
}

// RevokeResponse is the lease revoked (to be fenced on its engine and freed).
type RevokeResponse struct {
	Lease capacity.Lease `json:"lease"`
}

// MountCapacity mounts the worker capacity API (capacity.Path*, but for the sweep lock, which is
// the replicas' own) behind worker authentication, so a lease's holder is always the authenticated
// worker's session (capacity.SessionHolder), and the admin lease endpoints. When a session ends,
// its leases are revoked at once: the sweeper fences their work on the engine and then frees them.
// A session ends when its worker is evicted, or when a registration under its name supersedes it: a
// restarted process re-registering (its old queries may still run on the engine: they are fenced),
// or anyone else holding the worker secret (who gets a new session and can neither renew nor
// release the old one's leases; the old process, its token revoked, fences its own queries and
// registers again). Registration is never refused for a name in use: a restarted pod must get back
// in before its old session times out. It returns the sweeper; run it with
// e.Go(ctx, "capacity-sweeper", sweeper.Run).
func MountCapacity(e env.Env, cp *ControlPlane, cfg CapacityConfig) *capacity.Sweeper {
	if cfg.Metrics == nil {
		cfg.Metrics = capacity.NewMetrics(nil) // the stats read the sweeper's counters back
	}
	fleet := capacity.NewFleet(cfg.Store, e) // granted leases and the fence's tags carry its id
	api := capacity.NewAPI(cfg.Store, cfg.Locks, e, cfg.Metrics).WithFleet(fleet)
	if cfg.Ordered {
		api.Ordered()
		if cfg.Weights != nil {
			api.Weighted(cfg.Weights)
		}
		api.MayWait(func(holder string) (func(), bool) {
			done, ok := cp.takeHeld(capacity.HolderWorker(holder), "acquire-wait", AcquireWaitsPerWorkerMax)
			if !ok {
				cp.metrics.heldRefused.WithLabelValues("acquire-wait").Inc()
			}
			return done, ok
		})
	}
	if cfg.Limits != nil {
		api.Authority(cfg.Limits)
	}
	if cfg.Served != nil {
		api.Served(func(holder, cluster string) bool { return cfg.Served(capacity.HolderWorker(holder), cluster) })
	}
	stats := newCapacityStats(e, cfg)
	cp.capStats = stats
	cp.capRefused = api.LogRefused
	for _, ep := range api.Endpoints() {
		if ep.Path == capacity.PathWatch && cfg.NoContentionWatch {
			continue // a control plane that predates the watch (tests of the fallback)
		}
		if ep.Path == capacity.PathSweepLockAcquire || ep.Path == capacity.PathSweepLockRelease {
			// Only control-plane replicas sweep, and they take the lock in the store itself. A
			// worker holding the sweep lock (renewed for up to a day at a time) would stop every
			// replica's sweep: expired and revoked leases never freed, their slots lost.
			continue
		}
		serve := ep.Serve
		if ep.Path == capacity.PathAcquire {
			serve = stats.acquire(serve)
		}
		if ep.Path == capacity.PathWatch {
			// A watch is held for up to capacity.WatchWaitMax: at most HeldPerWorkerMax per worker
			// name, whatever its sessions.
			cp.HandleSession("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request, s Session) {
				cp.held(w, s.Worker, "contention-watch", func() { serve(w, r, capacity.SessionHolder(s.Worker, s.ID)) })
			})
			continue
		}
		cp.HandleSession("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request, s Session) {
			serve(w, r, capacity.SessionHolder(s.Worker, s.ID))
		})
	}
	cp.HandleAdmin("GET "+PathAdminCapacityStats, http.HandlerFunc(stats.serve))
	sw := &capacity.Sweeper{Env: e, Store: cfg.Store, Locks: cfg.Locks, Owner: cfg.Owner, Every: cfg.SweepEvery,
		Fence: cfg.Fence, Grace: cfg.FenceGrace, Fleet: fleet, Metrics: cfg.Metrics, OnFreed: api.Freed, Limits: cfg.Limits}
	if w, ok := cfg.Store.(capacity.FreedWatcher); ok && cfg.Ordered {
		// Replicas share the store: a slot freed through one wakes the others' waiting heads.
		w.NotifyFreed()
		sw.Watch = func(ctx context.Context) { api.WatchFreed(ctx, w) }
	}
	if w, ok := cfg.Store.(capacity.DenialWatcher); ok && !cfg.Ordered && !cfg.NoContentionWatch {
		// Replicas share the waiting record: a denial at one answers the contention watches
		// held at the others, which then need not poll the record for it.
		w.NotifyDenied()
		sw.Watch = func(ctx context.Context) { api.WatchDenied(ctx, w) }
	}
	// A session that ended can no longer renew (its token is revoked). Its leases stay counted
	// until they expire and the sweeper has fenced their work on the engine (or, where the
	// engine cannot be asked, the grace is over): a worker may be evicted moments after it was
	// granted one, and an evicted worker may be alive and still start queries under a lease
	// whose term it counts on (both found by TestLeaseCapsUnderRapidFaults).
	cp.OnSessionEnd(func(ctx context.Context, s Session, why string) {
		revoked, err := cfg.Store.Revoke(ctx, capacity.Selection{Holder: capacity.SessionHolder(s.Worker, s.ID)}, e.Now())
		if err != nil {
			e.Logger().Error("revoking the capacity leases of a worker session that ended failed; they expire and the sweep reclaims them",
				"worker", s.Worker, "session", s.ID, "why", why, "err", redact.Error(err))
			return
		}
		if len(revoked) > 0 {
			e.Logger().Warn("revoked the capacity leases of a worker session that ended: to be fenced and freed",
				"worker", s.Worker, "session", s.ID, "why", why, "leases", len(revoked))
			sw.Wake()
		}
	})
	cp.HandleAdmin("GET "+PathAdminLeases, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ls, err := cfg.Store.List(r.Context(), r.URL.Query().Get("cluster"))
		if err != nil {
			e.Logger().Warn("listing capacity leases failed", "err", redact.Error(err))
			workerapi.WriteError(w, http.StatusServiceUnavailable, "capacity store unavailable", "")
			return
		}
		workerapi.WriteJSON(w, http.StatusOK, capacity.MediaJSON, ls)
	}))
	cp.HandleAdmin("POST "+PathAdminLeaseRevoke, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveRevoke(w, r, e, cfg.Store, sw)
	}))
	return sw
}

// serveRevoke revokes one lease named by an operator and wakes the sweeper to fence and free it.
func serveRevoke(w http.ResponseWriter, r *http.Request, e env.Env, store capacity.CapacityStore, sw *capacity.Sweeper) {
	var req RevokeRequest
	if !capacity.DecodeRequest(w, r, &req) {
		return
	}
	ref, err := capacity.ParseLeaseID(req.Lease)
	if err != nil {
		workerapi.WriteBadRequest(w, err)
		return
	}
	revoked, err := store.Revoke(r.Context(), capacity.Selection{Refs: []capacity.LeaseRef{ref}}, e.Now())
	switch {
	case errors.Is(err, capacity.ErrInvalid):
		workerapi.WriteBadRequest(w, err)
		return
	case err != nil:
		e.Logger().Warn("revoking a capacity lease failed", "lease", req.Lease, "err", redact.Error(err))
		workerapi.WriteError(w, http.StatusServiceUnavailable, "capacity store unavailable", "")
		return
	case len(revoked) == 0:
		workerapi.WriteError(w, http.StatusNotFound, fmt.Sprintf("lease %q is not held (released, reclaimed or never granted)", req.Lease), "lease")
		return
	}
	e.Logger().Warn("capacity lease revoked by an operator: to be fenced and freed", "lease", req.Lease, "holder", revoked[0].Holder)
	sw.Wake()
	workerapi.WriteJSON(w, http.StatusOK, capacity.MediaJSON, RevokeResponse{Lease: revoked[0]})
}

package controlplane

import (
	"context"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/transport"
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
}

// MountCapacity mounts the worker capacity API (capacity.Path*) behind worker authentication,
// so a lease's holder is always the authenticated worker, and reclaims expired leases when the
// reaper evicts a worker. It returns the stale-lease sweeper; run it with
// e.Go(ctx, "capacity-sweeper", sweeper.Run).
func MountCapacity(e env.Env, cp *ControlPlane, cfg CapacityConfig) *capacity.Sweeper {
	api := capacity.NewAPI(cfg.Store, cfg.Locks, e, cfg.Metrics)
	if cfg.Ordered {
		api.Ordered()
		if cfg.Weights != nil {
			api.Weighted(cfg.Weights)
		}
	}
	for _, ep := range api.Endpoints() {
		cp.HandleWorker("POST "+ep.Path, ep.Serve)
	}
	// An evicted worker can no longer renew (its token is revoked), so its leases expire within
	// one TTL, before which the worker has fenced itself (TTL minus the drift margin). Freeing a
	// lease that has not expired yet would let the engine run over its cap: a worker may be
	// evicted moments after it was granted one (found by TestLeaseCapsUnderRapidFaults). So
	// eviction reclaims at once only what has already expired; the sweeper takes the rest.
	cp.OnEvict(func(ctx context.Context, w transport.WorkerInfo) {
		swept, err := cfg.Store.SweepStale(ctx, e.Now())
		if err != nil {
			e.Logger().Error("sweeping expired leases after an eviction failed", "worker", w.Name, "err", err)
			return
		}
		if len(swept) > 0 {
			e.Logger().Warn("reclaimed expired capacity leases after an eviction", "worker", w.Name, "leases", len(swept))
		}
	})
	return &capacity.Sweeper{Env: e, Store: cfg.Store, Locks: cfg.Locks, Owner: cfg.Owner, Every: cfg.SweepEvery}
}

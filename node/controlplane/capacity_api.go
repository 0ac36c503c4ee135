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
}

// MountCapacity mounts the worker capacity API (capacity.Path*) behind worker authentication,
// so a lease's holder is always the authenticated worker, and releases every lease of a worker
// the reaper evicts. It returns the stale-lease sweeper; run it with
// e.Go(ctx, "capacity-sweeper", sweeper.Run).
func MountCapacity(e env.Env, cp *ControlPlane, cfg CapacityConfig) *capacity.Sweeper {
	api := capacity.NewAPI(cfg.Store, cfg.Locks, e, cfg.Metrics)
	if cfg.Ordered {
		api.Ordered()
	}
	for _, ep := range api.Endpoints() {
		cp.HandleWorker("POST "+ep.Path, ep.Serve)
	}
	cp.OnEvict(func(ctx context.Context, w transport.WorkerInfo) {
		n, err := cfg.Store.ReleaseHolder(ctx, w.Name)
		if err != nil {
			// The sweeper reclaims them once they expire.
			e.Logger().Error("releasing an evicted worker's capacity leases failed", "worker", w.Name, "err", err)
			return
		}
		if n > 0 {
			e.Logger().Warn("released an evicted worker's capacity leases", "worker", w.Name, "leases", n)
		}
	})
	return &capacity.Sweeper{Env: e, Store: cfg.Store, Locks: cfg.Locks, Owner: cfg.Owner, Every: cfg.SweepEvery}
}

package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/workerapi"
)

// CapacityGuard is the worker's capacity guard for the proxy core: leases from the control
// plane (coordination.mode controlPlane) through the worker's authenticated session, renewed
// and self-fenced by a capacity.LeaseGuard; or a local count (mode local).
type CapacityGuard struct {
	guard capacity.Guard
	lease *capacity.LeaseGuard // nil in mode local
	mode  string
	c     config.Coordination
}

// NewCapacityGuard builds the guard for coordination settings c; w carries the session to the
// control plane. Call Start, then hand Guard() to proxy.Options.Guard.
func NewCapacityGuard(e env.Env, w *Worker, c config.Coordination, metrics *capacity.Metrics) (*CapacityGuard, error) {
	g := &CapacityGuard{mode: c.Mode, c: c}
	switch c.Mode {
	case config.CoordinationLocal:
		g.guard = capacity.NewLocalGuard()
		return g, nil
	case config.CoordinationControlPlane, "":
	default:
		return nil, fmt.Errorf("coordination.mode %q: must be controlPlane or local", c.Mode)
	}
	remote := capacity.NewRemotePost(w.Post)
	acquireTimeout := capacity.AcquireTimeoutDefault
	if c.Queue == config.QueueOrdered {
		// The control plane's queue replaces the core's poll sleep: wait there as long.
		remote.WithAcquireWait(proxy.GuardPollDefault)
		acquireTimeout += proxy.GuardPollDefault
	}
	lg, err := capacity.NewLeaseGuard(capacity.GuardOptions{
		Env:            e,
		Client:         remote,
		AcquireTimeout: acquireTimeout,
		AcquireWaits:   c.Queue == config.QueueOrdered,
		Holder:         w.Name(),
		OnUnavailable:  c.OnUnavailable,
		OnLeaseLost:    c.OnLeaseLost,
		LeaseTTL:       time.Duration(c.LeaseTTLSecs) * time.Second,
		DriftMargin:    time.Duration(c.DriftMarginSecs) * time.Second,
		Metrics:        metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("coordination: %w", err)
	}
	g.guard, g.lease = lg, lg
	w.AddHeartbeatContributor(g.contribute)
	if c.OnUnavailable != capacity.OnUnavailableLocalLimits {
		// failClosed: without the control plane no query can take a lease, so the worker must not
		// take traffic either.
		w.AddReadinessCheck("coordination", w.controlPlaneAnswering)
	}
	return g, nil
}

// Start runs the lease guard's duties (keeper, release flusher, idle reaper) in a loop task of
// their own until ctx ends (nothing in mode local).
func (g *CapacityGuard) Start(ctx context.Context) {
	if g.lease != nil {
		g.lease.Start(ctx)
	}
}

// Duties are the lease guard's duties for the node's env.Loop (none in mode local).
func (g *CapacityGuard) Duties() []*env.Duty {
	if g.lease == nil {
		return nil
	}
	return g.lease.Duties()
}

// Guard is the guard for proxy.Options.Guard (the core cancels a query whose slot is lost).
func (g *CapacityGuard) Guard() proxy.Guard { return ProxyGuard(g.guard) }

// Leases is the lease guard (nil in mode local), for status and tests.
func (g *CapacityGuard) Leases() *capacity.LeaseGuard { return g.lease }

func (g *CapacityGuard) contribute(hb *workerapi.Heartbeat) {
	hb.Coordination.Mode = g.mode
	hb.Coordination.Policy = g.c.OnUnavailable
}

// ProxyGuard returns g as the proxy core's Guard. proxy.Guard is capacity.Guard and
// proxy.ErrNoSlot is capacity.ErrAtCapacity, so no adaptation is needed; the function stays so
// callers need not know that.
func ProxyGuard(g capacity.Guard) proxy.Guard { return g }

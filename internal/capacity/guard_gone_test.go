package capacity_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
)

// TestAcquireOfAGoneCallerTakesNothing: an acquire whose caller is gone already (its context
// ended: a client that hung up while queued) answers the context's error and takes no slot of
// the cluster's cap: it does not ask the control plane (whose store may grant without looking at
// the context) and does not take an idle lease another query of the node could use.
func TestAcquireOfAGoneCallerTakesNothing(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		gone, cancel := e.WithCancel(ctx)
		cancel()
		slot, err := g.Acquire(gone, "c", 2)
		check("nothing idle: the context's error, no slot", slot == nil && errors.Is(err, context.Canceled))
		check("nothing idle: the control plane not asked, no lease held", client.acquires == 0 && client.leases() == 0)
		check("nothing idle: nothing held here", g.Held("c") == 0 && g.Local("c") == 0)

		held, err := g.Acquire(ctx, "c", 2)
		if err != nil {
			panic(err)
		}
		held.Release()
		check("a released lease waits idle", g.Idle("c") == 1)
		slot, err = g.Acquire(gone, "c", 2)
		check("a lease idle: the context's error, no slot", slot == nil && errors.Is(err, context.Canceled))
		check("a lease idle: it stays idle for the next query", g.Idle("c") == 1 && client.acquires == 1)
		next, err := g.Acquire(ctx, "c", 2)
		check("the next query takes the idle lease", err == nil && next != nil && client.acquires == 1)
		if next != nil {
			next.Release()
		}
	})
}

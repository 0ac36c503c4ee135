package capacity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// slowReleases is a store whose release batches take a while (or fail), counting acquires.
type slowReleases struct {
	capacity.LeaseClient
	env      env.Env
	delay    time.Duration
	fail     bool
	acquires int
}

func (c *slowReleases) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	c.acquires++
	return c.LeaseClient.Acquire(ctx, cluster, holder, limit, ttl, now)
}

func (c *slowReleases) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	if err := c.env.Sleep(ctx, c.delay); err != nil {
		return 0, err
	}
	if c.fail {
		return 0, errors.New("control plane unreachable")
	}
	return c.LeaseClient.ReleaseBatch(ctx, refs)
}

// TestPendingReleaseDeniesLocallyAndWakes: while this node's release of a cap-1 cluster is in
// flight, an acquire is denied without a round trip (the control plane still counts the lease);
// OnFreed runs once the batch lands and the next acquire is granted. When the batch fails,
// OnFreed runs too and acquires are sent again (the onUnavailable policy must get its say).
func TestPendingReleaseDeniesLocallyAndWakes(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	n := s.AddNode("w", nil)
	e := n.Env()
	client := &slowReleases{LeaseClient: capacity.NewMemory(), env: e, delay: 50 * time.Millisecond}
	var steps []string
	check := func(what string, ok bool) {
		if !ok {
			steps = append(steps, what)
		}
	}
	s.Spawn(n, "test", func() {
		ctx := n.Ctx()
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: client, Holder: "w"})
		if err != nil {
			panic(err)
		}
		freed := e.NewSignal()
		g.OnFreed(freed.Notify)
		g.Start(ctx)

		slot, err := g.Acquire(ctx, "c", 1)
		check("first acquire granted", err == nil)
		seen := freed.Seq()
		slot.Release()
		_, err = g.Acquire(ctx, "c", 1)
		check("acquire during the release denied", errors.Is(err, capacity.ErrAtCapacity))
		check("... without asking", client.acquires == 1)
		check("OnFreed ran after the batch", freed.Wait(ctx, seen) == nil && g.PendingReleases() == 0)
		slot, err = g.Acquire(ctx, "c", 1)
		check("acquire after the batch landed granted", err == nil && client.acquires == 2)

		client.fail = true
		seen = freed.Seq()
		slot.Release()
		check("OnFreed ran after a failed batch", freed.Wait(ctx, seen) == nil)
		_, err = g.Acquire(ctx, "c", 1)
		check("acquire after a failed batch asks", errors.Is(err, capacity.ErrAtCapacity) && client.acquires == 3)
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Error("not so: " + st)
	}
}

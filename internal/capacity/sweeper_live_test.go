package capacity

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// TestSweepsLeaveLiveLeasesAlone: a lease its holder renews on time is neither fenced nor freed
// by any sweep, however long its query runs (two minutes: four of its TTLs, 24 sweep rounds),
// with an engine fence or without: a sweep that asked the engine to stop a live lease's work, or
// freed its slot for another grant, would cancel a running query or run one past the cap.
func TestSweepsLeaveLiveLeasesAlone(t *testing.T) {
	for _, withFence := range []bool{false, true} {
		inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
			e := n.Env()
			m := NewMemory()
			fence := &confirmingFence{}
			sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp"}
			if withFence {
				sw.Fence = fence
			}
			lease, err := m.Acquire(ctx, "c", "w1/s", 1, 30*time.Second, e.Now())
			if err != nil {
				panic(err)
			}
			for round := range 24 {
				if round%2 == 0 {
					if lease, err = m.Renew(ctx, lease.Ref(), 30*time.Second, e.Now()); err != nil {
						fail("fence %v, round %d: the holder's renewal: %v", withFence, round, err)
						return
					}
				}
				if freed, _ := sw.SweepOnce(ctx, 10*time.Second); len(freed) > 0 {
					fail("fence %v, round %d: a live lease freed: %v", withFence, round, freed)
				}
				_ = e.Sleep(ctx, 5*time.Second)
			}
			if len(fence.asked) > 0 || m.Count("c") != 1 {
				fail("fence %v: the engine fence asked to stop %v; %d leases held, want none asked and 1", withFence, fence.asked, m.Count("c"))
			}
		})
	}
}

// TestRevokedLeaseKeepsItsSlotUntilItsHolderFencedItself: without an engine fence, a lease an
// operator revoked before its term (its holder alive, maybe still running the query) keeps its
// slot for one lease TTL from the first sweep that saw it: its holder's clock fences it by then.
// Freed earlier, the slot would be granted again while the query runs: past the cap.
func TestRevokedLeaseKeepsItsSlotUntilItsHolderFencedItself(t *testing.T) {
	inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
		e := n.Env()
		m := NewMemory()
		sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp"}
		lease, err := m.Acquire(ctx, "c", "w1/s", 1, 30*time.Second, e.Now())
		if err != nil {
			panic(err)
		}
		if _, err := m.Revoke(ctx, Selection{Refs: []LeaseRef{lease.Ref()}}, e.Now()); err != nil {
			panic(err)
		}
		start := e.Now()
		for e.Now().Sub(start) < 40*time.Second {
			freed, _ := sw.SweepOnce(ctx, time.Minute)
			at := e.Now().Sub(start)
			switch {
			case len(freed) > 0 && at < 30*time.Second:
				fail("the revoked lease freed %v after the first sweep, before its TTL (30 s)", at)
			case len(freed) == 0 && at >= 30*time.Second && m.Count("c") > 0:
				fail("the revoked lease still held %v after the first sweep, past its TTL", at)
			}
			_ = e.Sleep(ctx, 5*time.Second)
		}
	})
}

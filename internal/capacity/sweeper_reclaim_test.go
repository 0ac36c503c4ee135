package capacity

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/sim"
)

// confirmingFence confirms every fence and keeps the refs it was asked to stop.
type confirmingFence struct{ asked []LeaseRef }

func (f *confirmingFence) Fence(_ context.Context, _ string, refs []LeaseRef) (bool, error) {
	f.asked = append(f.asked, refs...)
	return true, nil
}

// sweepStore is a Memory whose Revoke or ReleaseBatch fails when told to.
type sweepStore struct {
	*Memory
	revoke, release bool
}

func (f *sweepStore) Revoke(ctx context.Context, sel Selection, now time.Time) ([]Lease, error) {
	if f.revoke {
		return nil, fmt.Errorf("%w: the store's connection was reset", ErrUnavailable)
	}
	return f.Memory.Revoke(ctx, sel, now)
}

func (f *sweepStore) ReleaseBatch(ctx context.Context, refs []LeaseRef) (int, error) {
	if f.release {
		return 0, fmt.Errorf("%w: the store's connection was reset", ErrUnavailable)
	}
	return f.Memory.ReleaseBatch(ctx, refs)
}

// inSim runs f as a task of a simulated control plane and reports its failures.
func inSim(t *testing.T, f func(ctx context.Context, n *sim.Node, fail func(string, ...any))) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("cp", nil)
	var failures []string
	s.Spawn(n, "test", func() {
		f(context.Background(), n, func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) })
	})
	if err := s.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// TestConfirmedFenceFreesAnExpiredLeaseAtOnce: an expired lease whose engine fence confirms is
// freed by the round that revoked it (not after the grace), counted as fenced and told to
// OnFreed; the fence is asked to stop it under the fleet's id (the engine tags carry it: a ref
// without it would stop nothing). A lease an operator revoked before its term is fenced but
// keeps its slot until its term is over, then is freed.
func TestConfirmedFenceFreesAnExpiredLeaseAtOnce(t *testing.T) {
	inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
		e := n.Env()
		m := NewMemory()
		fence := &confirmingFence{}
		metrics := NewMetrics(nil)
		var told []LeaseRef
		sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp", Fence: fence, Fleet: NewFleet(m, e), Metrics: metrics,
			OnFreed: func(refs []LeaseRef) { told = append(told, refs...) }}
		fleet := NewFleet(m, e).ID(ctx)
		expiring, err := m.Acquire(ctx, "c", "w1/s", 2, time.Second, e.Now())
		if err != nil {
			panic(err)
		}
		revoked, err := m.Acquire(ctx, "c", "w2/s", 2, time.Minute, e.Now())
		if err != nil {
			panic(err)
		}
		if _, err := m.Revoke(ctx, Selection{Refs: []LeaseRef{revoked.Ref()}}, e.Now()); err != nil {
			panic(err)
		}
		_ = e.Sleep(ctx, 2*time.Second)
		freed, err := sw.SweepOnce(ctx, time.Minute)
		if err != nil || len(freed) != 1 || freed[0].ID != expiring.ID {
			fail("the first round freed %v (%v); want %s, expired and fenced", freed, err, expiring.ID)
		}
		if got := testutil.ToFloat64(metrics.Reclaimed.WithLabelValues("c", "fenced")); got != 1 {
			fail("reclaimed{fence=fenced}: %v, want 1", got)
		}
		if len(told) != 1 || told[0].ID != expiring.ID {
			fail("OnFreed told %v, want %s", told, expiring.ID)
		}
		if len(fence.asked) != 2 {
			fail("the fence was asked to stop %v; want both revoked leases", fence.asked)
		}
		for _, r := range fence.asked {
			if fleet == "" || r.Fleet != fleet {
				fail("the fence was asked to stop %s of fleet %q; want fleet %q", r.ID, r.Fleet, fleet)
			}
		}
		if m.Count("c") != 1 {
			fail("%d leases held after the first round; want the revoked one, its term not over", m.Count("c"))
		}
		_ = e.Sleep(ctx, time.Minute)
		freed, err = sw.SweepOnce(ctx, time.Minute)
		if err != nil || len(freed) != 1 || freed[0].ID != revoked.ID || m.Count("c") != 0 {
			fail("once its term is over: freed %v (%v), %d held; want %s freed", freed, err, m.Count("c"), revoked.ID)
		}
	})
}

// TestSweeperForgetsFreedLeases: what a sweeper keeps of each revoked lease (its first failed
// fence, that it expired) goes once the lease is freed: a control plane running for months,
// its workers' leases expiring now and then, keeps none of them. A lease still waiting out its
// grace is kept.
func TestSweeperForgetsFreedLeases(t *testing.T) {
	inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
		e := n.Env()
		m := NewMemory()
		sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp", Fence: refusingFence{}, Grace: 10 * time.Second}
		for i := range 50 {
			if _, err := m.Acquire(ctx, "c", fmt.Sprintf("w%d/s", i), 100, time.Second, e.Now()); err != nil {
				panic(err)
			}
		}
		_ = e.Sleep(ctx, 2*time.Second)
		for range 15 {
			if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
				panic(err)
			}
			_ = e.Sleep(ctx, time.Second)
		}
		if m.Count("c") != 0 {
			fail("%d leases held after the grace", m.Count("c"))
		}
		waiting, err := m.Acquire(ctx, "c", "late/s", 100, time.Second, e.Now())
		if err != nil {
			panic(err)
		}
		_ = e.Sleep(ctx, 2*time.Second)
		if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
			panic(err)
		}
		sw.mu.Lock()
		defer sw.mu.Unlock()
		if len(sw.tried) != 1 || len(sw.expired) != 1 || !sw.expired[waiting.ID] {
			fail("the sweeper keeps %d failed fences and %d expiries of freed leases and %s; want only %s's",
				len(sw.tried), len(sw.expired), waiting.ID, waiting.ID)
		}
	})
}

// TestSweepFailuresFreeNothing: a round whose store cannot revoke says so (an error, nothing
// freed); a round whose store cannot free the fenced leases tells nobody they were freed (the
// ordered queue's waiters would be woken for slots still taken) and counts no reclaim; a round
// with nothing to free tells nobody anything.
func TestSweepFailuresFreeNothing(t *testing.T) {
	inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
		e := n.Env()
		store := &sweepStore{Memory: NewMemory()}
		metrics := NewMetrics(nil)
		calls := 0
		sw := &Sweeper{Env: e, Store: store, Locks: store, Owner: "cp", Metrics: metrics,
			OnFreed: func([]LeaseRef) { calls++ }}
		if _, err := sw.SweepOnce(ctx, time.Minute); err != nil || calls != 0 {
			fail("a round with no lease: %v, OnFreed called %d times; want nil and none", err, calls)
		}
		if _, err := store.Acquire(ctx, "c", "w/s", 1, time.Second, e.Now()); err != nil {
			panic(err)
		}
		_ = e.Sleep(ctx, 2*time.Second)
		store.revoke = true
		if freed, err := sw.SweepOnce(ctx, time.Minute); !errors.Is(err, ErrUnavailable) || len(freed) != 0 {
			fail("revoking failed: the round answered %v, %v; want the store's error", freed, err)
		}
		store.revoke, store.release = false, true
		if freed, _ := sw.SweepOnce(ctx, time.Minute); len(freed) != 0 || calls != 0 || store.Count("c") != 1 {
			fail("freeing failed: the round answered %v freed, OnFreed called %d times, %d held; want none, none, 1", freed, calls, store.Count("c"))
		}
		if got := testutil.ToFloat64(metrics.Reclaimed.WithLabelValues("c", "none")); got != 0 {
			fail("freeing failed: reclaimed{fence=none} %v, want 0", got)
		}
		store.release = false
		if freed, err := sw.SweepOnce(ctx, time.Minute); err != nil || len(freed) != 1 || calls != 1 {
			fail("once the store answers: %v (%v), OnFreed called %d times; want the lease freed and told", freed, err, calls)
		}
		if got := testutil.ToFloat64(metrics.Reclaimed.WithLabelValues("c", "none")); got != 1 {
			fail("without a fence: reclaimed{fence=none} %v, want 1", got)
		}
	})
}

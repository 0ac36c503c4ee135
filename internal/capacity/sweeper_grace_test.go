package capacity

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// refusingFence is an engine fence that cannot ask its engine.
type refusingFence struct{}

func (refusingFence) Fence(context.Context, string, []LeaseRef) (bool, error) {
	return false, fmt.Errorf("the engine refused the fence's login")
}

// TestUnconfirmedFenceHoldsTheSlotForTheGrace: an expired lease whose engine fence cannot
// confirm keeps its slot for the fence grace from the first attempt: FenceGraceDefault when the
// sweeper is given none (not zero: the slot freed at once, under a query that may still run),
// and the grace it is given otherwise (not the default).
func TestUnconfirmedFenceHoldsTheSlotForTheGrace(t *testing.T) {
	for _, c := range []struct {
		grace, want time.Duration
	}{{0, FenceGraceDefault}, {10 * time.Second, 10 * time.Second}} {
		t.Run(fmt.Sprint(c.grace), func(t *testing.T) {
			s := sim.New(sim.Opts{Seed: 1})
			n := s.AddNode("cp", nil)
			var failures []string
			s.Spawn(n, "test", func() {
				ctx, e := context.Background(), n.Env()
				m := NewMemory()
				sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp", Fence: refusingFence{}, Grace: c.grace}
				if _, err := m.Acquire(ctx, "c", "w", 1, time.Second, e.Now()); err != nil {
					panic(err)
				}
				_ = e.Sleep(ctx, 2*time.Second) // expired: the first sweep revokes it and fences
				start := e.Now()
				for e.Now().Sub(start) < c.want+2*time.Second {
					if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
						panic(err)
					}
					waited, held := e.Now().Sub(start), m.Count("c")
					if waited < c.want && held != 1 {
						failures = append(failures, fmt.Sprintf("freed %v after the first failed fence, grace %v", waited, c.want))
						return
					}
					if waited >= c.want+time.Second && held != 0 {
						failures = append(failures, fmt.Sprintf("still held %v after the first failed fence, grace %v", waited, c.want))
						return
					}
					_ = e.Sleep(ctx, 500*time.Millisecond)
				}
			})
			if err := s.Run(time.Hour); err != nil {
				t.Fatal(err)
			}
			for _, f := range failures {
				t.Error(f)
			}
		})
	}
}

// TestSweeperWokenBeforeItRuns: a revocation may wake the sweeper before its loop has started
// (the control plane's admin API is served first): the wake-up is kept, not a nil signal's
// panic. Once it runs, a wake-up (an operator's revocation) is a round at once, not at the next
// Every; and its Watch (the other replicas' freed leases) runs beside it.
func TestSweeperWokenBeforeItRuns(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("cp", nil)
	m := NewMemory()
	watched := false
	sw := &Sweeper{Env: n.Env(), Store: m, Locks: m, Owner: "cp", Every: time.Hour,
		Watch: func(context.Context) { watched = true }}
	var freed []time.Duration
	sw.OnFreed = func(refs []LeaseRef) {
		for range refs {
			freed = append(freed, s.Elapsed())
		}
	}
	s.Spawn(n, "test", func() {
		ctx, e := context.Background(), n.Env()
		revoke := func() {
			l, _ := m.Acquire(ctx, "c", "w", 2, time.Minute, e.Now())
			if _, err := m.Revoke(ctx, Selection{Refs: []LeaseRef{l.Ref()}}, e.Now()); err != nil {
				panic(err)
			}
		}
		revoke()
		_ = e.Sleep(ctx, 2*time.Minute) // past the lease's term
		sw.Wake()
		rctx, cancel := e.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		e.Go(rctx, "sweeper", sw.Run)
		_ = e.Sleep(ctx, time.Second)
		revoke()
		_ = e.Sleep(ctx, 2*time.Minute)
		sw.Wake() // at 4m1s
		_ = e.Sleep(ctx, 7*time.Minute)
	})
	if err := s.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(freed) != 2 || freed[0] > 2*time.Minute+time.Second || freed[1] > 4*time.Minute+2*time.Second {
		t.Fatalf("revoked leases freed at %v; want at the first round (2m) and right after the wake-up at 4m1s, not at the next hourly round", freed)
	}
	if !watched {
		t.Fatal("the sweeper's Watch never ran")
	}
}

package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
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

// TestIdleLeaseIsReleasedAfterItsHoldOnARunningGuard: on a guard whose duties have run a while
// (the idle reaper asleep with nothing to do), a lease released into idle and not taken again is
// released at the control plane after its hold, every time, not held to its term.
func TestIdleLeaseIsReleasedAfterItsHoldOnARunningGuard(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		for round := range 2 {
			sleep(ctx, e, time.Second) // the duties have run and found nothing idle
			slot, err := g.Acquire(ctx, "c", 1)
			check(fmt.Sprintf("round %d: a slot of cap 1 (%v)", round, err), err == nil)
			if err != nil {
				return
			}
			slot.Release()
			check(fmt.Sprintf("round %d: the released lease idles", round), g.Idle("c") == 1 && client.leases() == 1)
			sleep(ctx, e, 50*time.Millisecond) // past the hold (10 ms) and the release linger
			check(fmt.Sprintf("round %d: not taken within its hold, released at the control plane", round),
				g.Idle("c") == 0 && g.PendingReleases() == 0 && client.leases() == 0)
		}
	})
}

// failingRenewals is a LeaseClient whose renewals fail while down (a partition).
type failingRenewals struct {
	capacity.LeaseClient
	down bool
}

func (f *failingRenewals) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if f.down {
		return capacity.Lease{}, errors.New("connection refused")
	}
	return f.LeaseClient.Renew(ctx, ref, ttl, now)
}

// TestSettledOnlyWhenReleasedBeforeItWasLost: OnLost on a slot already lost runs at once, and
// capacity.Settled says a lease's slot can run none
// of its OnLost functions any more and ran none (its caller may then reuse what they reach)
// only for a slot released while its lease held: not for a live slot, whose fence may still run
// them, nor for one whose lease was lost (fenced) before its release, whose functions ran.
func TestSettledOnlyWhenReleasedBeforeItWasLost(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	n := s.AddNode("w", nil)
	client := &failingRenewals{LeaseClient: capacity.NewMemory()}
	var failed []string
	check := func(what string, ok bool) {
		if !ok {
			failed = append(failed, what)
		}
	}
	s.Spawn(n, "test", func() {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w",
			LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond})
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		kept, err := g.Acquire(n.Ctx(), "c", 2)
		if err != nil {
			panic(err)
		}
		check("a live slot is not settled", !capacity.Settled(kept))
		sleep(n.Ctx(), n.Env(), 5*time.Second) // renewed on time
		check("a live slot renewed is not settled", !kept.Lost() && !capacity.Settled(kept))
		kept.Release()
		check("a slot released while its lease held is settled", capacity.Settled(kept))

		fenced, err := g.Acquire(n.Ctx(), "c", 2)
		if err != nil {
			panic(err)
		}
		ran := 0
		fenced.OnLost(func() { ran++ })
		client.down = true
		sleep(n.Ctx(), n.Env(), 4*time.Second) // past the lease's term less the drift margin
		check("the partitioned slot is lost, its OnLost ran", fenced.Lost() && ran == 1)
		check("a lost slot is not settled", !capacity.Settled(fenced))
		// A query that registers its cancel after the fence (it started just then) is stopped
		// at once: it must not run on a lease the control plane may grant again.
		late := 0
		fenced.OnLost(func() { late++ })
		check("OnLost on a slot lost already runs at once", late == 1)
		fenced.Release()
		check("a slot lost before its release is not settled", !capacity.Settled(fenced))
	})
	if err := s.Run(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		t.Error("not so: " + f)
	}
}

// refusingAcquires answers every acquire with err (a control plane that refuses the request),
// counting them.
type refusingAcquires struct {
	capacity.LeaseClient
	err      error
	acquires int
}

func (r *refusingAcquires) Acquire(context.Context, string, string, int, time.Duration, time.Time) (capacity.Lease, error) {
	r.acquires++
	return capacity.Lease{}, r.err
}

// TestRefusedAcquireIsAskedOnce: an acquire the control plane refuses (invalid, or not this
// session's) with no releases riding on it is one round trip, answered the refusal or the
// unavailable policy: not asked again at once.
func TestRefusedAcquireIsAskedOnce(t *testing.T) {
	for _, refusal := range []error{capacity.ErrInvalid, capacity.ErrNotHolder} {
		s := sim.New(sim.Opts{Seed: 1})
		n := s.AddNode("w", nil)
		client := &refusingAcquires{LeaseClient: capacity.NewMemory(), err: fmt.Errorf("refused: %w", refusal)}
		var got error
		s.Spawn(n, "test", func() {
			g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w"})
			if err != nil {
				panic(err)
			}
			_, got = g.Acquire(n.Ctx(), "c", 2)
		})
		if err := s.Run(time.Minute); err != nil {
			t.Fatal(err)
		}
		if client.acquires != 1 || got == nil {
			t.Errorf("%v: asked %d times, answered %v; want once, an error", refusal, client.acquires, got)
		}
	}
}

package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/invariants"
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
	client := &failingRenewals{LeaseClient: capacity.NewMemory()}
	simChecks(t, 5, "w", 20*time.Second, func(n *sim.Node, check func(string, bool)) {
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
		ran, granted := 0, n.Env().Now()
		var ranAt time.Time
		fenced.OnLost(func() { ran, ranAt = ran+1, n.Env().Now() })
		client.down = true
		sleep(n.Ctx(), n.Env(), 4*time.Second) // past the lease's term less the drift margin
		check("the partitioned slot is lost, its OnLost ran", fenced.Lost() && ran == 1)
		// Its query is stopped when the lease stops counting here (the term less the drift
		// margin, 2.5 s), not at the next renewal attempt after.
		check(fmt.Sprintf("OnLost ran %v after the grant, want by 2.5 s", ranAt.Sub(granted)), ran == 1 && ranAt.Sub(granted) <= 2500*time.Millisecond+10*time.Millisecond)
		check("a lost slot is not settled", !capacity.Settled(fenced))
		// A query that registers its cancel after the fence (it started just then) is stopped
		// at once: it must not run on a lease the control plane may grant again.
		late := 0
		fenced.OnLost(func() { late++ })
		check("OnLost on a slot lost already runs at once", late == 1)
		fenced.Release()
		check("a slot lost before its release is not settled", !capacity.Settled(fenced))
	})
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
		if refusal == capacity.ErrInvalid && (!errors.Is(got, capacity.ErrInvalid) || errors.Is(got, capacity.ErrUnavailable)) {
			t.Errorf("an acquire refused as invalid answered %v: want the refusal, not the control plane unavailable", got)
		}
	}
}

// TestLocalLimitsSlotsCountOnceEach: under onUnavailable localLimits with the control plane
// gone, slots admitted by the node's own count are never lost, a release gives its slot back
// for the next query, and a second release of one slot is refused as a violation without
// giving back a slot another query holds: the node never runs more than the cap.
func TestLocalLimitsSlotsCountOnceEach(t *testing.T) {
	simChecks(t, 1, "w1", time.Minute, func(w *sim.Node, check func(string, bool)) {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: w.Env(), Client: capacity.NewRemote("http://cp-down", w.Client(), nil),
			Holder: "w1", OnUnavailable: capacity.OnUnavailableLocalLimits})
		if err != nil {
			panic(err)
		}
		a, errA := g.Acquire(w.Ctx(), "c", 2)
		b, errB := g.Acquire(w.Ctx(), "c", 2)
		_, errFull := g.Acquire(w.Ctx(), "c", 2)
		check("two local slots at cap 2, the third denied", errA == nil && errB == nil && errors.Is(errFull, capacity.ErrAtCapacity))
		if errA != nil || errB != nil {
			return
		}
		check("a local slot is never lost", !a.Lost() && !b.Lost())
		a.Release()
		c, err := g.Acquire(w.Ctx(), "c", 2)
		check("a released local slot serves the next query", err == nil)
		v := invariants.Catch(a.Release)
		check("a second release is a violation", v != nil)
		_, err = g.Acquire(w.Ctx(), "c", 2)
		check("after a second release, two queries still hold the cap", errors.Is(err, capacity.ErrAtCapacity))
		b.Release()
		if c != nil {
			c.Release()
		}
	})
}

// TestCallerGoneDuringAnAcquireLeavesTheControlPlaneReachable: a caller that goes away while
// its acquire is in flight is answered its context's error and counts as no failure of the
// control plane's: the next query's acquire is sent at once and granted, not refused as
// unreachable (an acquire that times out or is refused as invalid says nothing of the control
// plane, whose every acquire is then refused for a while).
func TestCallerGoneDuringAnAcquireLeavesTheControlPlaneReachable(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 4})
	n := s.AddNode("w", nil)
	client := &contentionClient{Memory: capacity.NewMemory(), delay: 100 * time.Millisecond, env: n.Env()}
	var gone, next error
	metrics := capacity.NewMetrics(nil)
	s.Spawn(n, "test", func() {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w", Metrics: metrics})
		if err != nil {
			panic(err)
		}
		ctx, cancel := n.Env().WithCancel(n.Ctx())
		n.Env().Go(n.Ctx(), "hang-up", func(context.Context) {
			sleep(n.Ctx(), n.Env(), 50*time.Millisecond)
			cancel()
		})
		_, gone = g.Acquire(ctx, "c", 2)
		var slot capacity.Slot
		slot, next = g.Acquire(n.Ctx(), "c", 2)
		if slot != nil {
			slot.Release()
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	failures := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("acquire"))
	if !errors.Is(gone, context.Canceled) || next != nil || client.acquires != 2 || failures != 0 {
		t.Fatalf("caller gone mid-acquire: %v; the next acquire: %v after %d acquires sent, %v coordination failures; want context.Canceled, a slot, 2, 0",
			gone, next, client.acquires, failures)
	}
}

// TestDeniedAcquiresAreCounted: an acquire denied because the cluster is full, by the control
// plane (another worker holds the cap) or here (this node's own slots fill it), is counted in
// queryflux_capacity_lease_denied_total{cluster}; a granted one is not.
func TestDeniedAcquiresAreCounted(t *testing.T) {
	store := capacity.NewMemory()
	metrics := capacity.NewMetrics(nil)
	denied := func() float64 { return testutil.ToFloat64(metrics.LeaseDenied.WithLabelValues("c")) }
	simChecks(t, 1, "w", time.Minute, func(n *sim.Node, check func(string, bool)) {
		other, err := store.Acquire(n.Ctx(), "c", "other", 2, time.Minute, n.Env().Now())
		if err != nil {
			panic(err)
		}
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: store, Holder: "w", Metrics: metrics})
		if err != nil {
			panic(err)
		}
		mine, err := g.Acquire(n.Ctx(), "c", 2)
		check("granted the second slot, nothing counted", err == nil && denied() == 0)
		_, err = g.Acquire(n.Ctx(), "c", 2)
		check(fmt.Sprintf("denied by the control plane, counted (%v)", denied()), errors.Is(err, capacity.ErrAtCapacity) && denied() == 1)
		_, err = g.Acquire(n.Ctx(), "c", 1)
		check(fmt.Sprintf("denied here (this node fills cap 1), counted (%v)", denied()), errors.Is(err, capacity.ErrAtCapacity) && denied() == 2)
		if mine != nil {
			mine.Release()
		}
		_, _ = store.ReleaseBatch(n.Ctx(), []capacity.LeaseRef{other.Ref()})
	})
}

// grantsAgain is a LeaseClient that answers the next acquire with again (a lease the worker
// holds already: a control plane that misbehaves), once.
type grantsAgain struct {
	countingClient
	again *capacity.Lease
}

func (c *grantsAgain) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if l := c.again; l != nil {
		c.again = nil
		return *l, nil
	}
	return c.countingClient.Acquire(ctx, cluster, holder, limit, ttl, now)
}

// TestRefusedGrantLeavesTheCapToTheNode: an acquire answered with a lease this node holds
// already is refused (no second query on that lease) and takes nothing of the node's count: the
// next acquires are asked and granted up to the cap, as before.
func TestRefusedGrantLeavesTheCapToTheNode(t *testing.T) {
	client := &grantsAgain{countingClient: countingClient{LeaseClient: capacity.NewMemory()}}
	simChecks(t, 1, "w", time.Minute, func(n *sim.Node, check func(string, bool)) {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w"})
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		first, err := g.Acquire(n.Ctx(), "c", 2)
		if err != nil {
			panic(err)
		}
		held := first.(interface{ Lease() capacity.Lease }).Lease()
		client.again = &held
		_, err = g.Acquire(n.Ctx(), "c", 2)
		check("a lease held already, granted again: refused", errors.Is(err, capacity.ErrAtCapacity))
		second, err := g.Acquire(n.Ctx(), "c", 2)
		check("the next acquire is granted the cap's second slot", err == nil && g.Held("c") == 2)
		_, err = g.Acquire(n.Ctx(), "c", 2)
		check("then the cap is reached", errors.Is(err, capacity.ErrAtCapacity))
		first.Release()
		if second != nil {
			second.Release()
		}
		sleep(n.Ctx(), n.Env(), time.Second)
		// A lease given back, granted again: refused, and given back again at once (the control
		// plane that granted it holds it otherwise).
		batches := client.batches
		client.again = &held
		_, err = g.Acquire(n.Ctx(), "c", 2)
		check("a lease given back, granted again: refused", errors.Is(err, capacity.ErrAtCapacity))
		sleep(n.Ctx(), n.Env(), 100*time.Millisecond)
		check(fmt.Sprintf("... and released again within 100 ms (%d release batches, were %d)", client.batches, batches),
			client.batches == batches+1 && g.PendingReleases() == 0)
	})
}

// TestRetryMaxFollowsTheQueueMode: in retry mode a denied query must ask again within
// RetryAskEvery (the control plane keeps a freed slot for a waiting worker only that long); in
// ordered mode its acquire waits at the control plane and no bound is set.
func TestRetryMaxFollowsTheQueueMode(t *testing.T) {
	for _, waits := range []bool{false, true} {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: env.Real(nil), Client: capacity.NewMemory(), Holder: "w", AcquireWaits: waits})
		if err != nil {
			t.Fatal(err)
		}
		want := capacity.RetryAskEvery
		if waits {
			want = 0
		}
		if got := g.RetryMax(); got != want {
			t.Errorf("AcquireWaits %v: RetryMax %v, want %v", waits, got, want)
		}
	}
}

// simChecks runs body in a task of a simulated node named name (seed seed) for up to d, and
// fails t with every check body found false.
func simChecks(t *testing.T, seed uint64, name string, d time.Duration, body func(n *sim.Node, check func(string, bool))) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: seed})
	n := s.AddNode(name, nil)
	var failed []string
	check := func(what string, ok bool) {
		if !ok {
			failed = append(failed, what)
		}
	}
	s.Spawn(n, "test", func() { body(n, check) })
	if err := s.Run(d); err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		t.Error("not so: " + f)
	}
}

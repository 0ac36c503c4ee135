package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// contentionClient is a control plane as a ContentionAcquirer over a memory store: it counts
// acquire round trips and release batches, and answers contended as told.
type contentionClient struct {
	*capacity.Memory
	contended bool
	delay     time.Duration // each acquire takes this long (needs env)
	env       env.Env
	acquires  int
	carried   int
	batches   int
}

func (c *contentionClient) AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []capacity.LeaseRef) (capacity.Lease, bool, error) {
	c.acquires++
	if c.delay > 0 {
		if err := c.env.Sleep(ctx, c.delay); err != nil {
			return capacity.Lease{}, true, err
		}
	}
	l, err := c.Memory.Acquire(ctx, cluster, holder, limit, ttl, now)
	if _, rerr := c.Memory.ReleaseBatch(ctx, release); rerr != nil {
		return capacity.Lease{}, true, rerr
	}
	c.carried += len(release)
	return l, c.contended, err
}

func (c *contentionClient) AcquireReleasing(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []capacity.LeaseRef) (capacity.Lease, error) {
	l, _, err := c.AcquireContended(ctx, cluster, holder, limit, ttl, now, release)
	return l, err
}

func (c *contentionClient) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	return c.AcquireReleasing(ctx, cluster, holder, limit, ttl, now, nil)
}

func (c *contentionClient) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	c.batches++
	return c.Memory.ReleaseBatch(ctx, refs)
}

// leases is how many leases of cluster c the store holds.
func (c *contentionClient) leases() int {
	ls, _ := c.List(context.Background(), "c")
	return len(ls)
}

// reuseWorld runs body in a task of a simulated node against a guard (started) over client.
// It returns the failed steps.
func reuseWorld(t testing.TB, client capacity.LeaseClient, opts capacity.GuardOptions,
	body func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool))) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: 11})
	n := s.AddNode("w", nil)
	var failed []string
	check := func(what string, ok bool) {
		if !ok {
			failed = append(failed, what)
		}
	}
	s.Spawn(n, "test", func() {
		opts.Env, opts.Client, opts.Holder = n.Env(), client, "w"
		g, err := capacity.NewLeaseGuard(opts)
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		body(n.Ctx(), n.Env(), g, check)
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		t.Error("not so: " + f)
	}
}

func sleep(ctx context.Context, e env.Env, d time.Duration) {
	if err := e.Sleep(ctx, d); err != nil {
		panic(err)
	}
}

// TestIdleLeaseIsReused: a slot released and acquired again at once (even at cap 1, where the
// local deny would otherwise refuse) takes the idle lease without a round trip, counts it when
// released (not when given back unused), and wakes OnFreed's callbacks when the lease goes idle. Not taken, the idle lease is released
// after its hold; the next acquire asks again.
func TestIdleLeaseIsReused(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	metrics := capacity.NewMetrics(nil)
	reuseWorld(t, client, capacity.GuardOptions{Metrics: metrics}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		freed := 0
		g.OnFreed(func() { freed++ })
		slot, err := g.Acquire(ctx, "c", 1)
		check("first acquire granted", err == nil && client.acquires == 1)
		slot.Release()
		check("the released lease is idle and still held", g.Idle("c") == 1 && g.Held("c") == 1 && client.leases() == 1)
		check("OnFreed ran when it went idle", freed == 1)
		reused := func() float64 { return testutil.ToFloat64(metrics.LeaseReused.WithLabelValues("c")) }
		unused, err := g.Acquire(ctx, "c", 1)
		check("second acquire granted from the idle lease, no round trip", err == nil && client.acquires == 1)
		check("... and no longer idle", g.Idle("c") == 0 && g.Held("c") == 1)
		capacity.Unused(unused) // its caller could not use it (an engine connection not ready)
		unused.Release()
		check("a slot given back unused is not counted as reused", reused() == 0 && g.Idle("c") == 1)
		again, err := g.Acquire(ctx, "c", 1)
		check("taken again from idle", err == nil && client.acquires == 1)
		check("the same lease", again.(interface{ Lease() capacity.Lease }).Lease().ID == slot.(interface{ Lease() capacity.Lease }).Lease().ID)
		again.Release()
		check("counted once its query is over", reused() == 1)
		sleep(ctx, e, 15*time.Millisecond) // past the hold (10 ms) and the release linger
		check("not taken within the hold: released the normal way",
			g.Idle("c") == 0 && g.PendingReleases() == 0 && client.leases() == 0 && client.batches == 1)
		_, err = g.Acquire(ctx, "c", 1)
		check("the next acquire asks again", err == nil && client.acquires == 2)
	})
}

// TestReusedLeasesCountedPerCluster: slots taken from idle count as reused under their own
// cluster's label when clusters alternate (the guard keeps the last cluster's counter, so a
// statement of the same cluster as the last one does not look it up again).
func TestReusedLeasesCountedPerCluster(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	metrics := capacity.NewMetrics(nil)
	reuseWorld(t, client, capacity.GuardOptions{Metrics: metrics}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		reused := func(c string) int { return int(testutil.ToFloat64(metrics.LeaseReused.WithLabelValues(c))) }
		for _, c := range []string{"c", "d"} {
			slot, err := g.Acquire(ctx, c, 1)
			check("first acquire of "+c, err == nil)
			slot.Release()
		}
		for _, c := range []string{"c", "c", "d", "c", "d", "d", "d"} {
			slot, err := g.Acquire(ctx, c, 1)
			check("taken from idle: "+c, err == nil && client.acquires == 2)
			slot.Release()
		}
		check(fmt.Sprintf("reused c %d, d %d (want 3 and 4)", reused("c"), reused("d")), reused("c") == 3 && reused("d") == 4)
	})
}

// BenchmarkIdleLeaseTakeAndRelease is a worker's lease work for one statement of a busy
// client in transaction pool mode: its slot taken from the idle lease (TakeIdle, under the
// event loop's NoWait) and released into idle again at the transaction's end, on a simulated
// node (its clock stands still: every take finds the lease within its hold and reuse window).
// Count it in instructions (callgrind), which the machine's load does not change.
func BenchmarkIdleLeaseTakeAndRelease(b *testing.B) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(b, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		slot, err := g.Acquire(ctx, "c", 4)
		check("first acquire", err == nil)
		slot.Release()
		takeAndRelease(b, ctx, g, e.Now())
		check("every take from idle", client.acquires == 1)
	})
}

// takeAndRelease is BenchmarkIdleLeaseTakeAndRelease's loop (a function of its own, for
// callgrind's --toggle-collect).
func takeAndRelease(b *testing.B, ctx context.Context, g *capacity.LeaseGuard, now time.Time) {
	var slot capacity.Slot
	for b.Loop() {
		slot = g.TakeIdle(1, "c", 4, slot, now) // as an event loop's client: its last slot is spare
		if slot == nil {
			b.Fatal("no idle lease")
		}
		slot.Release()
	}
}

// TestSpareSlotIsTheNextSlotsMemory: a released slot handed to TakeIdle as spare is the slot
// it answers (no allocation per leased statement), a fresh one and as good as one taken without
// a spare: its lease, its release counted, its Lost. A spare still running (not released) is
// left alone: its lease stays live and the answer is another slot.
func TestSpareSlotIsTheNextSlotsMemory(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		lease := func(s capacity.Slot) capacity.Lease { return s.(interface{ Lease() capacity.Lease }).Lease() }
		first, err := g.Acquire(ctx, "c", 2)
		check("first acquire", err == nil)
		first.Release()
		second := g.TakeIdle(0, "c", 2, first, e.Now())
		check("the released spare's memory", second == first)
		check("its lease, live", lease(second).Cluster == "c" && !second.Lost() && g.Held("c") == 1 && g.Idle("c") == 0)
		third := g.TakeIdle(0, "c", 2, second, e.Now()) // second runs: not spare, and no lease idles
		check("no idle lease for a running spare's caller", third == nil)
		running, err := g.Acquire(ctx, "c", 2)
		check("a second lease", err == nil && client.acquires == 2)
		running.Release()
		fourth := g.TakeIdle(0, "c", 2, second, e.Now())
		check("a running spare left alone", fourth != nil && fourth != second && !second.Lost() && g.Held("c") == 2)
		check("its own lease", lease(fourth).ID != lease(second).ID)
		fourth.Release()
		second.Release()
		var slot capacity.Slot = second
		allocs := testing.AllocsPerRun(50, func() {
			slot = g.TakeIdle(0, "c", 2, slot, e.Now())
			slot.Release()
		})
		check(fmt.Sprintf("no allocation with a spare (%v)", allocs), allocs == 0)
	})
}

// TestIdleTakeJudgesAtTheCallersTime: TakeIdle judges an idle lease's hold at the time its
// caller read (the proxy core's admission start), not at a clock of its own: a lease idle past
// every hold at that time is not taken but released, though the guard's clock stands still.
func TestIdleTakeJudgesAtTheCallersTime(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		slot, err := g.Acquire(ctx, "c", 2)
		check("first acquire", err == nil)
		slot.Release()
		check("its lease idle", g.Idle("c") == 1)
		late := g.TakeIdle(0, "c", 2, nil, e.Now().Add(time.Second))
		check("no lease taken a second past its release", late == nil && g.Idle("c") == 0 && g.Held("c") == 0)
		check("its release queued", g.PendingReleases() == 1)
		slot, err = g.Acquire(ctx, "c", 2)
		check("a new lease", err == nil && client.acquires == 2)
		slot.Release()
		now := g.TakeIdle(0, "c", 2, nil, e.Now())
		check("the idle lease taken at its release's time", now != nil && g.Idle("c") == 0)
		if now != nil {
			now.Release()
		}
	})
}

// TestSlotTagIsTheLeasesWithoutAllocating: a slot's engine tag is its lease's (the same when
// the lease is reused), and reading it allocates nothing: every statement of a busy client asks
// for it (it was built anew each time, a string per statement).
func TestSlotTagIsTheLeasesWithoutAllocating(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		slot, err := g.Acquire(ctx, "c", 1)
		if err != nil {
			panic(err)
		}
		tag := capacity.SlotTag(slot)
		check("the lease's tag", tag == slot.(interface{ Lease() capacity.Lease }).Lease().Ref().Tag() && tag == "qf-lease:c#1")
		allocs := testing.AllocsPerRun(100, func() { _ = capacity.SlotTag(slot) })
		check(fmt.Sprintf("no allocation (%v)", allocs), allocs == 0)
		slot.Release()
		again, err := g.Acquire(ctx, "c", 1)
		check("reused, the same tag", err == nil && client.acquires == 1 && capacity.SlotTag(again) == tag)
	})
}

// TestIdleLeaseGoesBackToWhoReleasedIt: an acquire with an affinity takes the idle lease that
// affinity released (its engine connection still carries that lease's tag), not the most
// recent one; without one, or with an affinity that released none, it takes the most recent.
func TestIdleLeaseGoesBackToWhoReleasedIt(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		id := func(s capacity.Slot) string { return s.(interface{ Lease() capacity.Lease }).Lease().ID }
		one, err1 := g.Acquire(query.WithAffinity(ctx, 1), "c", 3)
		two, err2 := g.Acquire(query.WithAffinity(ctx, 2), "c", 3)
		three, err3 := g.Acquire(ctx, "c", 3)
		check("three leases granted", err1 == nil && err2 == nil && err3 == nil && client.acquires == 3)
		one.Release()
		two.Release()
		three.Release()
		again, err := g.Acquire(query.WithAffinity(ctx, 1), "c", 3)
		check("affinity 1 gets the lease it released, not the most recent", err == nil && id(again) == id(one))
		other, err := g.Acquire(query.WithAffinity(ctx, 9), "c", 3)
		check("an affinity that released none gets the most recent", err == nil && id(other) == id(three))
		again.Release() // still affinity 1's: taken by it next time too
		last, err := g.Acquire(query.WithAffinity(ctx, 1), "c", 3)
		check("affinity 1 again", err == nil && id(last) == id(one) && client.acquires == 3)
	})
}

// TestReuseWindowSendsBusyWorkerBack: with a client whose renewals do not say whether the
// cluster is contended (no checks), back-to-back 1 ms queries for 300 ms reuse a lease only
// within the window from the acquire's answer: about one round trip per window, not one per
// query and not one in all; a lease released past its window is not kept idle.
func TestReuseWindowSendsBusyWorkerBack(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		start := e.Now()
		queries := 0
		for e.Now().Sub(start) < 300*time.Millisecond {
			slot, err := g.Acquire(ctx, "c", 1)
			if err != nil {
				sleep(ctx, e, time.Millisecond) // a release of ours is landing
				continue
			}
			queries++
			sleep(ctx, e, time.Millisecond)
			slot.Release()
		}
		check("many queries ran", queries >= 150)
		// 300 ms / 50 ms window: about 6 grants (each window ends with a release that must land).
		check("the control plane was asked about once per window", client.acquires >= 5 && client.acquires <= 8)
		t.Logf("%d queries, %d acquire round trips", queries, client.acquires)

		slot, err := g.Acquire(ctx, "c", 2)
		check("a fresh acquire", err == nil)
		sleep(ctx, e, 55*time.Millisecond) // a query longer than the window
		slot.Release()
		check("a lease released past its window is not kept idle", g.Idle("c") == 0 && g.PendingReleases() == 1)
	})
}

// TestContendedClusterKeepsNothingIdle: while the control plane says the cluster is contended
// the guard releases instead of keeping leases idle, and an answer saying contended releases
// the idle leases already kept; an uncontended answer turns reuse on again.
func TestContendedClusterKeepsNothingIdle(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory(), contended: true}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		slot, err := g.Acquire(ctx, "c", 2)
		check("granted", err == nil)
		slot.Release()
		check("contended: released, not idle", g.Idle("c") == 0 && g.PendingReleases() == 1)
		_, err = g.Acquire(ctx, "c", 2)
		check("the next acquire asks", err == nil && client.acquires == 2)

		client.contended = false
		a, _ := g.Acquire(ctx, "c", 3)
		a.Release()
		check("uncontended again: kept idle", g.Idle("c") == 1)
		client.contended = true
		_, err = g.Acquire(ctx, "d", 1) // another cluster: its answer says nothing about c
		check("an answer about d leaves c's idle lease", err == nil && g.Idle("c") == 1)
		b, err := g.Acquire(ctx, "c", 3)
		check("reused", err == nil && client.acquires == 4)
		b.Release()
		_, err = g.Acquire(ctx, "c", 3) // takes the idle one: no answer, no change
		check("reused again", err == nil && client.acquires == 4)
		two, err := g.Acquire(ctx, "c", 3)
		check("third slot asks, answer contended", err == nil && client.acquires == 5)
		two.Release()
		check("contended again: released, not idle", g.Idle("c") == 0)
	})
}

// TestContendedAnswerReleasesIdleLeases: a lease that went idle while an acquire of its cluster
// was out is released at once when that acquire's answer says contended.
func TestContendedAnswerReleasesIdleLeases(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		a, _ := g.Acquire(ctx, "c", 3)
		// The answer comes 1 ms after the acquire, the release half-way: within the idle hold.
		client.contended, client.delay, client.env = true, time.Millisecond, e
		e.Go(ctx, "release-meanwhile", func(ctx context.Context) {
			sleep(ctx, e, 500*time.Microsecond)
			a.Release()
			check("kept idle while the acquire is out", g.Idle("c") == 1)
		})
		_, err := g.Acquire(ctx, "c", 3)
		check("the acquire out at the time was granted", err == nil && client.acquires == 2)
		check("its contended answer released the idle lease", g.Idle("c") == 0 && g.Held("c") == 1 && g.PendingReleases() == 1)
	})
}

// checkingClient is a contentionClient whose renewal answers also say whether the renewed
// leases' clusters are contended (a ContentionRenewer, as Remote is): the guard's keeper then
// checks a cluster whose leases it reuses. It counts renewal batches.
type checkingClient struct {
	*contentionClient
	renewContended bool
	renewals       int
}

func (c *checkingClient) RenewBatchContended(ctx context.Context, refs []capacity.LeaseRef, ttl time.Duration, now time.Time) ([]capacity.Renewed, map[string]bool, error) {
	c.renewals++
	results, err := capacity.RenewAll(ctx, c.Memory, refs, ttl, now)
	contended := map[string]bool{}
	for _, r := range refs {
		contended[r.Cluster()] = c.renewContended
	}
	return results, contended, err
}

// TestKeeperGivesUpIdleLeasesOnAContendedCheck: a worker reusing its leases keeps a released
// one idle for the next query; when the keeper's check (a renewal of a live lease, checkAfter
// after the last answer) hears that another worker was denied the cluster, the idle lease is
// released at once, not when its hold runs out, and nothing is kept idle after. (Without the
// keeper giving them up, a waiting worker waits for the busy worker's idle leases to age out.)
func TestKeeperGivesUpIdleLeasesOnAContendedCheck(t *testing.T) {
	client := &checkingClient{contentionClient: &contentionClient{Memory: capacity.NewMemory()}}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		start := e.Now()
		at := func(d time.Duration) { sleep(ctx, e, d-e.Now().Sub(start)) }
		a, err1 := g.Acquire(query.WithAffinity(ctx, 1), "c", 3)
		b, err2 := g.Acquire(query.WithAffinity(ctx, 2), "c", 3)
		check("two leases granted, uncontended", err1 == nil && err2 == nil && client.acquires == 2)
		at(time.Millisecond)
		a.Release()
		a, err1 = g.Acquire(query.WithAffinity(ctx, 1), "c", 3)
		check("a reused: the keeper is to check at 10ms", err1 == nil && client.acquires == 2)
		at(5 * time.Millisecond)
		b.Release() // idle until 15ms
		check("b idle", g.Idle("c") == 1)
		client.renewContended = true // another worker is denied c
		at(12 * time.Millisecond)
		check(fmt.Sprintf("the keeper checked (renewal batches %d)", client.renewals), client.renewals == 1)
		check("the contended answer released the idle lease before its hold ran out", g.Idle("c") == 0)
		at(14 * time.Millisecond)
		check("... at the control plane too", client.leases() == 1)
		a.Release()
		check("nothing kept idle while contended", g.Idle("c") == 0 && g.PendingReleases() == 1)
	})
}

// TestNoReuseWithoutContentionReportOrInOrderedMode: a client that cannot say whether the
// cluster is contended (a store), and the ordered queue (acquires wait at the control plane, in
// arrival order), get no idle reuse.
func TestNoReuseWithoutContentionReportOrInOrderedMode(t *testing.T) {
	plain := &countingClient{LeaseClient: capacity.NewMemory()}
	reuseWorld(t, plain, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		slot, _ := g.Acquire(ctx, "c", 2)
		slot.Release()
		check("store client: released, not idle", g.Idle("c") == 0 && g.PendingReleases() == 1)
	})
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{AcquireWaits: true}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		slot, _ := g.Acquire(ctx, "c", 2)
		slot.Release()
		check("ordered: released, not idle", g.Idle("c") == 0 && g.PendingReleases() == 1)
	})
}

// TestIdleLeasesCountAndRespectALoweredCap: idle leases count as held (the local deny refuses
// an acquire that would need another lease), but an acquire that finds no room under a lowered
// cap does not take one.
func TestIdleLeasesCountAndRespectALoweredCap(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		a, _ := g.Acquire(ctx, "c", 2)
		_, _ = g.Acquire(ctx, "c", 2)
		a.Release()
		_, err := g.Acquire(ctx, "c", 1)
		check("cap lowered to 1 with one running: denied locally, idle lease not taken",
			errors.Is(err, capacity.ErrAtCapacity) && client.acquires == 2 && g.Idle("c") == 1)
		_, err = g.Acquire(ctx, "c", 2)
		check("at cap 2 the idle lease serves", err == nil && client.acquires == 2 && g.Idle("c") == 0)
	})
}

// TestStopReleasesIdleLeases: when the guard's context ends, idle leases are released at the
// control plane at once, not left to the sweep.
func TestStopReleasesIdleLeases(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory()}
	s := sim.New(sim.Opts{Seed: 2})
	n := s.AddNode("w", nil)
	var g *capacity.LeaseGuard
	var idleBefore int
	s.Spawn(n, "test", func() {
		ctx, cancel := n.Env().WithCancel(n.Ctx())
		var err error
		g, err = capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w"})
		if err != nil {
			panic(err)
		}
		g.Start(ctx)
		slot, err := g.Acquire(ctx, "c", 1)
		if err != nil {
			panic(err)
		}
		slot.Release()
		idleBefore = g.Idle("c")
		cancel()
	})
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if idleBefore != 1 || g.Idle("c") != 0 || client.leases() != 0 {
		t.Fatalf("idle before stop %d, after %d; leases at the control plane %d: want 1, 0, 0", idleBefore, g.Idle("c"), client.leases())
	}
}

// TestAPIReportsContention: an acquire answer says contended while another worker's acquire of
// the cluster was denied within ContendedFor (a worker's own denial does not count), and
// uncontended after; Remote reads it, and reads a control plane that does not say as contended.
func TestAPIReportsContention(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 4})
	store := capacity.NewMemory()
	s.AddNode("cp", func(n *sim.Node) http.Handler { return capacity.NewAPIHandler(store, store, n.Env(), nil) })
	w := s.AddNode("w", nil)
	type answer struct {
		contended bool
		err       error
	}
	var got []answer
	ask := func(holder string) {
		r := capacity.NewRemote("http://cp", w.Client(), nil)
		_, contended, err := r.AcquireContended(w.Ctx(), "c", holder, 1, time.Minute, time.Time{}, nil)
		got = append(got, answer{contended, err})
	}
	var first capacity.Lease
	s.Spawn(w, "test", func() {
		var err error
		first, err = capacity.NewRemote("http://cp", w.Client(), nil).Acquire(w.Ctx(), "c", "w1", 1, time.Minute, time.Time{})
		if err != nil {
			panic(err)
		}
		ask("w1") // 0: w1's own denial
		ask("w1") // 1: still only w1 was denied
		ask("w2") // 2: w2 denied; w1 was denied just before
	})
	s.At(100*time.Millisecond, func() {
		s.Spawn(w, "later", func() {
			if _, err := store.ReleaseBatch(w.Ctx(), []capacity.LeaseRef{first.Ref()}); err != nil {
				panic(err)
			}
			ask("w1") // 3: granted; w2 was denied 100 ms ago
		})
	})
	s.At(3*time.Second, func() {
		s.Spawn(w, "much-later", func() {
			ls, _ := store.List(w.Ctx(), "c")
			if _, err := store.ReleaseBatch(w.Ctx(), []capacity.LeaseRef{ls[0].Ref()}); err != nil {
				panic(err)
			}
			ask("w1") // 4: granted, nobody denied for over ContendedFor
		})
	})
	if err := s.Run(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	denied := func(a answer) bool { return errors.Is(a.err, capacity.ErrAtCapacity) }
	if len(got) != 5 || !denied(got[0]) || got[0].contended || got[1].contended || !denied(got[2]) || !got[2].contended ||
		got[3].err != nil || !got[3].contended || got[4].err != nil || got[4].contended {
		t.Fatalf("answers %+v: want denied uncontended x2, denied contended, granted contended, granted uncontended", got)
	}

	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", capacity.MediaJSON)
		_, _ = w.Write([]byte(`{"granted":true,"lease":{"id":"c#1","cluster":"c","holder":"w","generation":1,"expiresAt":"2030-01-01T00:00:00Z"}}`))
	}))
	defer old.Close()
	_, contended, err := capacity.NewRemote(old.URL, old.Client(), nil).AcquireContended(context.Background(), "c", "w", 1, time.Minute, time.Time{}, nil)
	if err != nil || !contended {
		t.Fatalf("a control plane without the field: contended %v, err %v; want contended", contended, err)
	}
}

// apiFleet is a simulated control plane (the capacity API over a memory store, unauthenticated:
// workers name themselves) and worker nodes with lease guards over Remote, as a worker has.
type apiFleet struct {
	s       *sim.Sim
	store   *capacity.Memory
	cp      *sim.Node
	asked   map[string]int // requests to the control plane, by path
	noWatch bool           // the control plane predates the contention watch (404)
	lose    bool           // watches are never answered (their answers are lost)
}

func newAPIFleet(seed uint64) *apiFleet {
	f := &apiFleet{s: sim.New(sim.Opts{Seed: seed}), store: capacity.NewMemory(), asked: map[string]int{}}
	f.cp = f.s.AddNode("cp", func(n *sim.Node) http.Handler {
		api := capacity.NewAPIHandler(f.store, f.store, n.Env(), nil)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.asked[r.URL.Path]++
			if f.noWatch && r.URL.Path == capacity.PathWatch {
				http.NotFound(w, r)
				return
			}
			if f.lose && r.URL.Path == capacity.PathWatch {
				_ = n.Env().Sleep(r.Context(), time.Hour)
				return
			}
			api.ServeHTTP(w, r)
		})
	})
	return f
}

// guard starts a lease guard of worker node n, named after it, over Remote.
func (f *apiFleet) guard(n *sim.Node, metrics *capacity.Metrics) *capacity.LeaseGuard {
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: capacity.NewRemote("http://cp", n.Client(), nil),
		Holder: n.Name(), Metrics: metrics})
	if err != nil {
		panic(err)
	}
	g.Start(n.Ctx())
	return g
}

// waiting starts, at at, a worker on node late that asks for a slot of cluster every
// RetryAskEvery, as a waiting query does, until granted; firstAsk and granted are when.
func (f *apiFleet) waiting(late *sim.Node, at time.Duration, cluster string, limit int, firstAsk, granted *time.Duration) {
	f.s.At(at, func() {
		f.s.Spawn(late, "waiting", func() {
			g, e := f.guard(late, nil), late.Env()
			*firstAsk = f.s.Elapsed()
			for {
				if _, err := g.Acquire(late.Ctx(), cluster, limit); err == nil {
					*granted = f.s.Elapsed()
					return
				}
				sleep(late.Ctx(), e, capacity.RetryAskEvery)
			}
		})
	})
}

// busyClient runs back-to-back queries of length q on cluster c (cap limit) through g until
// stop, retrying a denied acquire after 2 ms as the proxy core's first back-off does, and calls
// ran with each query's slot.
func busyClient(ctx context.Context, e env.Env, g *capacity.LeaseGuard, limit int, q time.Duration, stop time.Time, ran func(capacity.Slot)) {
	busyOn(ctx, e, g, "c", limit, q, stop, ran)
}

// busyOn is busyClient on cluster.
func busyOn(ctx context.Context, e env.Env, g *capacity.LeaseGuard, cluster string, limit int, q time.Duration, stop time.Time, ran func(capacity.Slot)) {
	for e.Now().Before(stop) {
		slot, err := g.Acquire(ctx, cluster, limit)
		if err != nil {
			sleep(ctx, e, 2*time.Millisecond)
			continue
		}
		ran(slot)
		sleep(ctx, e, q)
		slot.Release()
	}
}

func leaseID(s capacity.Slot) string { return s.(interface{ Lease() capacity.Lease }).Lease().ID }

// TestBusyWorkerKeepsItsLeasesWhileUncontended: two clients of one worker running back-to-back
// 1 ms queries, nobody else asking, keep one lease each while they are busy (one engine tag
// each: no retag), off the queries' path: the worker holds a contention watch open at the
// control plane (one request per watchWait, 1 s), or, with a control plane that predates the
// watch (404), checks with a renewal once per checkAfter (10 ms), instead of asking for a new
// lease every leaseReuseWindow. Busy for 405 ms, idle for 150 ms (the idle leases go back, and
// the reuse window runs out), busy for 600 ms: two leases each, in all. Before the checks, each
// client was granted a new lease every 20 ms (about 100 acquires and leases); with checks that
// stopped after a window ran out unchecked, one every 50 ms after the pause.
func TestBusyWorkerKeepsItsLeasesWhileUncontended(t *testing.T) {
	for _, noWatch := range []bool{false, true} {
		f := newAPIFleet(5)
		f.noWatch = noWatch
		w := f.s.AddNode("w1", nil)
		metrics := capacity.NewMetrics(nil)
		queries, leases := 0, map[string]bool{}
		f.s.Spawn(w, "test", func() {
			g, e := f.guard(w, metrics), w.Env()
			start := e.Now()
			ran := func(s capacity.Slot) {
				queries++
				leases[leaseID(s)] = true
			}
			for client := uint64(1); client <= 2; client++ {
				e.Go(w.Ctx(), "client", func(ctx context.Context) {
					ctx = query.WithAffinity(ctx, client)
					busyClient(ctx, e, g, 4, time.Millisecond, start.Add(405*time.Millisecond), ran)
					sleep(ctx, e, 150*time.Millisecond)
					busyClient(ctx, e, g, 4, time.Millisecond, start.Add(1150*time.Millisecond), ran)
				})
			}
		})
		if err := f.s.Run(1500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		reused := int(testutil.ToFloat64(metrics.LeaseReused.WithLabelValues("c")))
		acquires, renewals, watches := f.asked[capacity.PathAcquire], f.asked[capacity.PathRenewBatch], f.asked[capacity.PathWatch]
		t.Logf("no watch %v: %d queries, %d leases, %d reused; %d acquires, %d renewal batches, %d watches",
			noWatch, queries, len(leases), reused, acquires, renewals, watches)
		if queries < 1500 || len(leases) != 4 || acquires != 4 || reused != queries-4 {
			t.Errorf("no watch %v: %d queries under %d leases (%d acquires, %d reused): want at least 1500 queries under 4 leases, 4 acquires, the rest reused",
				noWatch, queries, len(leases), acquires, reused)
		}
		switch {
		case noWatch && (renewals < 60 || renewals > 110 || watches != 1):
			// One check per checkAfter (10 ms) while the leases are reused: each is due 10 ms
			// after the last one was sent; the watch was asked for once.
			t.Errorf("without the watch: %d renewal batches and %d watches in a second of reuse: want about one per 10 ms, and one watch", renewals, watches)
		case !noWatch && (renewals != 0 || watches < 2 || watches > 4):
			// A watch for each busy spell, and one more after a second.
			t.Errorf("with the watch: %d renewal batches and %d watches in a second of reuse: want none and 2 to 4", renewals, watches)
		}
	}
}

// TestWaitingWorkerIsGrantedWithinTheCheckBound: a worker keeps both slots of a cluster busy
// (two clients, back-to-back 1 ms queries) and reuses its leases; then another worker asks, every
// RetryAskEvery as a waiting query does. The control plane denies it, and the busy worker's
// watch is answered contended at once (or, with a control plane that predates the watch, its
// next check, at most checkAfter after its last answer, plus a round trip, hears it): it
// keeps nothing idle, its slots go back as their queries end, and the control plane keeps the
// freed slot for the waiting worker (fair share). The bound: the waiting worker is granted at
// its first ask after checkAfter + two round trips + a query + releaseLinger, i.e. within
// RetryAskEvery + 25 ms of its first ask here.
func TestWaitingWorkerIsGrantedWithinTheCheckBound(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, 8} {
		f := newAPIFleet(seed)
		f.noWatch = seed%2 == 0 // a control plane that predates the watch: the renewals' checks
		busy, late := f.s.AddNode("busy", nil), f.s.AddNode("late", nil)
		var firstAsk, granted time.Duration
		busyQueries := 0
		f.s.Spawn(busy, "test", func() {
			g, e := f.guard(busy, nil), busy.Env()
			stop := e.Now().Add(time.Second)
			for client := uint64(1); client <= 2; client++ {
				e.Go(busy.Ctx(), "client", func(ctx context.Context) {
					busyClient(query.WithAffinity(ctx, client), e, g, 2, time.Millisecond, stop, func(capacity.Slot) { busyQueries++ })
				})
			}
		})
		f.waiting(late, 300*time.Millisecond+time.Duration(seed)*time.Millisecond, "c", 2, &firstAsk, &granted)
		if err := f.s.Run(1500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		wait := granted - firstAsk
		t.Logf("seed %d: busy worker ran %d queries; the waiting worker was granted %v after its first ask", seed, busyQueries, wait)
		if granted == 0 || wait > capacity.RetryAskEvery+25*time.Millisecond {
			t.Errorf("seed %d: the waiting worker was granted %v after its first ask (granted: %v): want within %v",
				seed, wait, granted != 0, capacity.RetryAskEvery+25*time.Millisecond)
		}
	}
}

// TestWaitingWorkerIsGrantedWithinTheCheckBoundOnALaterCluster: a cluster the busy worker
// starts reusing while its contention watch of another cluster is in flight is watched at once
// (that watch is sent again covering both): its busy client keeps one lease (one engine tag)
// until another worker asks, not a new lease per reuse window, and the bound of
// TestWaitingWorkerIsGrantedWithinTheCheckBound holds for the worker waiting for it.
func TestWaitingWorkerIsGrantedWithinTheCheckBoundOnALaterCluster(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		f := newAPIFleet(seed)
		busy, late := f.s.AddNode("busy", nil), f.s.AddNode("late", nil)
		var firstAsk, granted time.Duration
		leasesOfD := map[string]bool{} // the busy worker's, before the other worker asks
		f.s.Spawn(busy, "test", func() {
			g, e := f.guard(busy, nil), busy.Env()
			stop := e.Now().Add(1400 * time.Millisecond)
			e.Go(busy.Ctx(), "client-c", func(ctx context.Context) {
				busyOn(query.WithAffinity(ctx, 1), e, g, "c", 2, time.Millisecond, stop, func(capacity.Slot) {})
			})
			e.Go(busy.Ctx(), "client-d", func(ctx context.Context) {
				sleep(ctx, e, 100*time.Millisecond) // the watch of c is in flight by now
				busyOn(query.WithAffinity(ctx, 2), e, g, "d", 1, time.Millisecond, stop, func(s capacity.Slot) {
					if f.s.Elapsed() < 300*time.Millisecond {
						leasesOfD[leaseID(s)] = true
					}
				})
			})
		})
		f.waiting(late, 300*time.Millisecond+time.Duration(seed)*time.Millisecond, "d", 1, &firstAsk, &granted)
		if err := f.s.Run(1500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		wait := granted - firstAsk
		if len(leasesOfD) != 1 {
			t.Errorf("seed %d: the busy client of d ran under %d leases in 200 ms uncontended, want 1", seed, len(leasesOfD))
		}
		if granted == 0 || wait > capacity.RetryAskEvery+25*time.Millisecond {
			t.Errorf("seed %d: the worker waiting for d was granted %v after its first ask (granted: %v): want within %v",
				seed, wait, granted != 0, capacity.RetryAskEvery+25*time.Millisecond)
		}
	}
}

// TestRenewalAnswersSayContention: a renewal batch's answer lists the clusters of its leases
// that nobody else was denied lately (as an acquire's answer says), and Remote reads it: the
// others are contended, and so is a cluster whose cap is now below the leases held. A control
// plane that does not say (older), and an ordered one, say nothing about any cluster.
func TestRenewalAnswersSayContention(t *testing.T) {
	f := newAPIFleet(6)
	w := f.s.AddNode("w", nil)
	var got []map[string]bool
	f.s.Spawn(w, "test", func() {
		r := capacity.NewRemote("http://cp", w.Client(), nil)
		c, err1 := r.Acquire(w.Ctx(), "c", "w1", 1, time.Minute, time.Time{})
		d, err2 := r.Acquire(w.Ctx(), "d", "w1", 1, time.Minute, time.Time{})
		if err1 != nil || err2 != nil {
			panic(fmt.Sprint(err1, err2))
		}
		renew := func() {
			results, contended, err := r.RenewBatchContended(w.Ctx(), []capacity.LeaseRef{c.Ref(), d.Ref()}, time.Minute, time.Time{})
			if err != nil || len(results) != 2 || results[0].Err != nil || results[1].Err != nil {
				panic(fmt.Sprint(results, err))
			}
			got = append(got, contended)
		}
		renew()
		if _, err := r.Acquire(w.Ctx(), "c", "w2", 1, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrAtCapacity) {
			panic(err)
		}
		renew()
	})
	if err := f.s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[map[c:false d:false] map[c:true d:false]]" {
		t.Fatalf("contended clusters %v: want neither, then c after w2 was denied c", got)
	}

	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", capacity.MediaJSON)
		_, _ = w.Write([]byte(`{"results":[{"id":"c#1","lease":{"id":"c#1","cluster":"c","holder":"w","generation":1,"expiresAt":"2030-01-01T00:00:00Z"}}]}`))
	}))
	defer old.Close()
	ref := capacity.LeaseRef{ID: "c#1", Generation: 1}
	results, contended, err := capacity.NewRemote(old.URL, old.Client(), nil).RenewBatchContended(context.Background(), []capacity.LeaseRef{ref}, time.Minute, time.Time{})
	if err != nil || len(results) != 1 || results[0].Err != nil || len(contended) != 0 {
		t.Fatalf("a control plane without the field: %+v, contended %v, err %v; want renewed, nothing said", results, contended, err)
	}

	// Two leases of c held, asked of control planes whose configuration says cap 2 (retry
	// mode), cap 1 (lowered since they were granted), and cap 2 in ordered mode.
	for _, tc := range []struct {
		name    string
		cap     int
		ordered bool
		want    string
	}{{"cap 2", 2, false, "map[c:false]"}, {"cap lowered to 1", 1, false, "map[c:true]"}, {"ordered", 2, true, "map[]"}} {
		store := capacity.NewMemory()
		var refs []capacity.LeaseRef
		for range 2 {
			l, err := store.Acquire(context.Background(), "c", "w", 2, time.Minute, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, l.Ref())
		}
		api := capacity.NewAPI(store, store, env.Real(nil), nil).Authority(func(string) (int, time.Duration, bool) { return tc.cap, time.Minute, true })
		if tc.ordered {
			api.Ordered()
		}
		srv := httptest.NewServer(serveAPIAs(api, "w"))
		results, contended, err := capacity.NewRemote(srv.URL, srv.Client(), nil).RenewBatchContended(context.Background(), refs, time.Minute, time.Time{})
		srv.Close()
		if err != nil || len(results) != 2 || results[0].Err != nil || fmt.Sprint(contended) != tc.want {
			t.Errorf("%s: %+v, contended %v, err %v; want both renewed, contended %s", tc.name, results, contended, err, tc.want)
		}
	}
}

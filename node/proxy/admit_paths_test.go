package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// queueWaits is how many waits the queue-duration histogram of group g / cluster holds.
func queueWaits(h *harness, g, cluster string) uint64 {
	s := h.core.metrics.series(g, cluster)
	var n uint64
	for i := range s.queueDuration.counts {
		n += s.queueDuration.counts[i].Load()
	}
	return n
}

// TestAWaitIsObservedOnceWhateverItsEnd: queryflux_queue_duration_seconds counts every
// admission's wait, under the cluster it ran on, and a wait that timed out under its group.
func TestAWaitIsObservedOnceWhateverItsEnd(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	h.activate(oneGroup(RoundRobin, 5, 50*time.Millisecond, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "first running", func() bool { return h.core.Running("a") == 1 })
	if n := queueWaits(h, "g", "a"); n != 1 {
		t.Fatalf("%d waits observed on a after one admission, want 1", n)
	}
	if _, err := h.run(t.Context(), sel("select 2")); err == nil {
		t.Fatal("a query past the cap ran before its wait timed out")
	}
	if n := queueWaits(h, "g", ""); n != 1 {
		t.Fatalf("%d timed-out waits observed on the group, want 1", n)
	}
	g.release()
	_, _ = running.result(t)
}

// TestAQueryThatMustNotWaitLeavesNoTrace: under NoWait (an event loop's statement) a full cluster
// answers ErrWouldWait, and the query leaves nothing behind: no record, no wait observed, the
// runtime not held (its caller asks again where it may wait).
func TestAQueryThatMustNotWaitLeavesNoTrace(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	rt := h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "first running", func() bool { return h.core.Running("a") == 1 })
	records, pins, waits := len(h.recs.all()), rt.Inflight(), queueWaits(h, "g", "")
	_, err := h.core.Admit(NoWait(t.Context()), sel("select 2"))
	if !errors.Is(err, engine.ErrWouldWait) {
		t.Fatalf("a full cluster under NoWait: %v, want ErrWouldWait", err)
	}
	if n := len(h.recs.all()); n != records {
		t.Errorf("a query that would wait reported %d records", n-records)
	}
	if n := rt.Inflight(); n != pins {
		t.Errorf("a query that would wait left the runtime held (%d pins, was %d)", n, pins)
	}
	if n := queueWaits(h, "g", ""); n != waits {
		t.Errorf("a query that would wait was observed as a wait")
	}
	g.release()
	_, _ = running.result(t)
}

// TestAQueuedQueryFollowsANewConfigThatRefusesIt: a query queued under one configuration is
// refused, as a new query would be, when the next configuration leaves it no route; and the
// configuration it arrived under is let go once its own running query ends (its engines close).
func TestAQueuedQueryFollowsANewConfigThatRefusesIt(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	eng := &fakeEngine{rows: 1, gate: g}
	factory := func(config.Cluster) (query.Engine, error) { return eng, nil }
	first, err := Build(churnConfig(1, 0), factory)
	if err != nil {
		t.Fatal(err)
	}
	h.core.Activate(first)
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "the first query running", func() bool { return eng.executing.Load() == 1 })
	queued := h.async(t.Context(), sel("select 2"))
	eventually(t, "the second query queued", func() bool { return h.core.Queued("main") == 1 })

	noRoute := churnConfig(1, 1)
	noRoute.RoutingFallback = ""
	next, err := Build(noRoute, factory, Reuse(first))
	if err != nil {
		t.Fatal(err)
	}
	h.core.Activate(next)
	_, err = queued.result(t)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeNoRoute {
		t.Fatalf("the queued query under a configuration with no route: %v, want CodeNoRoute", err)
	}
	g.release()
	if _, err := running.result(t); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first configuration let go", first.Closed)
}

// movedSpec is a configuration that sends every query to group "other" (cluster b of eng,
// enabled as told, no queue), keeping group g on cluster a of busy.
func movedSpec(busy, eng query.Engine, enabled bool) RuntimeSpec {
	spec := oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, busy))
	b := cl("b", 1, eng)
	b.Enabled = enabled
	spec.Clusters = append(spec.Clusters, b)
	spec.Groups = append(spec.Groups, GroupSpec{Name: "other", Strategy: RoundRobin, Members: []MemberSpec{{Cluster: "b"}}})
	spec.Fallback = "other"
	return spec
}

// TestAQueuedQueryMovedToAGroupWithoutAQueue: a queued query that the next configuration sends
// to a group with no queue runs there at once when it has room, as a new arrival would, and is
// refused as full when it has none.
func TestAQueuedQueryMovedToAGroupWithoutAQueue(t *testing.T) {
	for _, room := range []bool{true, false} {
		h := newHarness(t)
		g := newGate(h.env)
		busy := &fakeEngine{rows: 1, gate: g}
		h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, busy)))
		running := h.async(t.Context(), sel("select 1"))
		eventually(t, "the first query running", func() bool { return busy.executing.Load() == 1 })
		queued := h.async(t.Context(), sel("select 2"))
		eventually(t, "the second query queued", func() bool { return h.core.Queued("g") == 1 })
		h.activate(movedSpec(busy, &fakeEngine{rows: 2}, room))
		n, err := queued.result(t)
		var qe *query.Error
		switch {
		case room && (err != nil || n != 2):
			t.Errorf("moved to a group with room and no queue: %d rows, %v; want it run there", n, err)
		case !room && (!errors.As(err, &qe) || qe.Code != query.CodeQueueFull):
			t.Errorf("moved to a group with no room and no queue: %v, want CodeQueueFull", err)
		}
		if h.core.Queued("g") != 0 || h.core.Queued("other") != 0 {
			t.Errorf("a moved query stayed in a line: g %d, other %d", h.core.Queued("g"), h.core.Queued("other"))
		}
		g.release()
		_, _ = running.result(t)
	}
}

// TestAQueuedQueryFailsWhenTheGuardFails: the head of the line, asking for a freed slot a guard
// that has become unavailable, gets the guard's failure, not an endless wait.
func TestAQueuedQueryFailsWhenTheGuardFails(t *testing.T) {
	h := newHarness(t)
	guard := capacitytest.NewLosingGuard()
	h.core = New(Options{Env: h.env, Guard: guard, OnFinish: h.recs.add, GuardPoll: 20 * time.Millisecond})
	g := newGate(h.env)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "the first query running", func() bool { return h.core.Running("a") == 1 })
	queued := h.async(t.Context(), sel("select 2"))
	eventually(t, "the second query queued", func() bool { return h.core.Queued("g") == 1 })
	guard.SetUnavailable(true)
	g.release() // a slot frees: the head asks the guard
	if _, err := running.result(t); err != nil {
		t.Fatal(err)
	}
	_, err := queued.result(t)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeCoordinationUnavailable {
		t.Fatalf("the head of the line under an unavailable guard: %v, want CodeCoordinationUnavailable", err)
	}
}

// TestARecordTellsItsWaitFromItsRun: a query's record gives the time it waited for a slot
// (QueueMs) apart from the time it ran (ExecMs).
func TestARecordTellsItsWaitFromItsRun(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	h.activate(oneGroup(RoundRobin, 5, time.Hour, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	first := h.async(t.Context(), sel("select 1"))
	eventually(t, "the first query running", func() bool { return h.core.Running("a") == 1 })
	second := h.async(t.Context(), sel("select 2"))
	eventually(t, "the second query queued", func() bool { return h.core.Queued("g") == 1 })
	h.env.advance(3 * time.Second) // the first runs 3 s, the second waits them
	g.release()
	for _, o := range []*outcome{first, second} {
		if _, err := o.result(t); err != nil {
			t.Fatal(err)
		}
	}
	by := map[string]Record{}
	for _, r := range h.recs.all() {
		by[r.SQL] = r
	}
	if r := by["select 1"]; r.ExecMs < 3000 || r.QueueMs >= 3000 {
		t.Errorf("the query that ran 3 s at once: exec %d ms, queue %d ms", r.ExecMs, r.QueueMs)
	}
	if r := by["select 2"]; r.QueueMs < 3000 || r.ExecMs >= 3000 {
		t.Errorf("the query that waited 3 s: queue %d ms, exec %d ms", r.QueueMs, r.ExecMs)
	}
}

// TestASessionRefusedByItsEngineHoldsNothing: a transaction on an engine that cannot pin a
// connection is refused, and gives back its slot and its runtime.
func TestASessionRefusedByItsEngineHoldsNothing(t *testing.T) {
	h := newHarness(t)
	rt := h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
	if _, err := h.core.OpenSession(t.Context(), sel("begin")); err == nil {
		t.Fatal("an engine without sessions opened one")
	}
	if n, pins := h.core.Running("a"), rt.Inflight(); n != 0 || pins != 0 {
		t.Fatalf("after the refused session: %d running on a, the runtime pinned %d times", n, pins)
	}
	mustRun(t, h) // the slot is free for the next query
}

// TestAQueuedQueryMovedToAFullGroupWaitsInItsLine: a queued query that the next configuration
// sends to a group with a queue and no room waits in that group's line, runs once its cluster
// frees, and leaves neither line behind.
func TestAQueuedQueryMovedToAFullGroupWaitsInItsLine(t *testing.T) {
	h := newHarness(t)
	onA, onB := newGate(h.env), newGate(h.env)
	a, b := &fakeEngine{rows: 1, gate: onA}, &fakeEngine{rows: 2, gate: onB}
	spec := func(fallback string) RuntimeSpec {
		s := movedSpec(a, b, true)
		s.Groups[1].MaxQueuedQueries, s.Groups[1].CapacityWaitTimeout = 5, time.Minute
		s.Routers = []Router{&HeaderRouter{Header: "X-To", ByValue: map[string]string{"other": "other"}}}
		s.Fallback = fallback
		return s
	}
	h.activate(spec("g"))
	toB := sel("select 0")
	toB.Headers = map[string]string{"X-To": "other"}
	onOther := h.async(t.Context(), toB)
	eventually(t, "a query running on b", func() bool { return b.executing.Load() == 1 })
	onFirst := h.async(t.Context(), sel("select 1"))
	eventually(t, "a query running on a", func() bool { return a.executing.Load() == 1 })
	moved := h.async(t.Context(), sel("select 2"))
	eventually(t, "the query queued in g", func() bool { return h.core.Queued("g") == 1 })
	h.activate(spec("other"))
	eventually(t, "the query moved to other's line", func() bool { return h.core.Queued("g") == 0 && h.core.Queued("other") == 1 })
	onB.release()
	if n, err := moved.result(t); err != nil || n != 2 {
		t.Fatalf("the moved query once b freed: %d rows, %v; want it run on b", n, err)
	}
	if h.core.Queued("g") != 0 || h.core.Queued("other") != 0 {
		t.Fatalf("a line kept the moved query: g %d, other %d", h.core.Queued("g"), h.core.Queued("other"))
	}
	onA.release()
	for _, o := range []*outcome{onOther, onFirst} {
		if _, err := o.result(t); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAQueuedQueryFailsWhenItsGroupHasNoHealthyCluster: the head of a line whose every cluster
// went unhealthy is told so, rather than waiting out its timeout.
func TestAQueuedQueryFailsWhenItsGroupHasNoHealthyCluster(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	rt := h.activate(oneGroup(RoundRobin, 5, time.Hour, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "the first query running", func() bool { return h.core.Running("a") == 1 })
	queued := h.async(t.Context(), sel("select 2"))
	eventually(t, "the second query queued", func() bool { return h.core.Queued("g") == 1 })
	rt.SetHealthy("a", false)
	g.release()
	if _, err := running.result(t); err != nil {
		t.Fatal(err)
	}
	_, err := queued.result(t)
	var qe *query.Error
	if !errors.As(err, &qe) || !strings.Contains(qe.Message, "no enabled, healthy cluster") {
		t.Fatalf("the head of a line with no healthy cluster: %v", err)
	}
}

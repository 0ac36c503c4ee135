package proxy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/query"
)

func clustersOf(t *testing.T, h *harness, n int) []string {
	t.Helper()
	var out []string
	for _, r := range h.recs.all() {
		out = append(out, r.Cluster)
	}
	if len(out) != n {
		t.Fatalf("want %d records, got %d", n, len(out))
	}
	return out
}

func TestSelectionStrategies(t *testing.T) {
	t.Run("roundRobin cycles", func(t *testing.T) {
		h := newHarness(t)
		h.activate(oneGroup(RoundRobin, 0, 0, cl("a", 5, &fakeEngine{rows: 1}), cl("b", 5, &fakeEngine{rows: 1}), cl("c", 5, &fakeEngine{rows: 1})))
		for i := 0; i < 6; i++ {
			if _, err := h.run(t.Context(), sel("select 1")); err != nil {
				t.Fatal(err)
			}
		}
		got := clustersOf(t, h, 6)
		want := []string{"a", "b", "c", "a", "b", "c"}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	})
	t.Run("failover prefers the first healthy enabled member", func(t *testing.T) {
		h := newHarness(t)
		spec := oneGroup(Failover, 0, 0, cl("a", 5, &fakeEngine{rows: 1}), cl("b", 5, &fakeEngine{rows: 1}), cl("c", 5, &fakeEngine{rows: 1}))
		spec.Clusters[0].Enabled = false
		rt := h.activate(spec)
		mustRun(t, h)
		rt.SetHealthy("b", false)
		mustRun(t, h)
		rt.SetHealthy("b", true)
		mustRun(t, h)
		got := clustersOf(t, h, 3)
		if got[0] != "b" || got[1] != "c" || got[2] != "b" {
			t.Fatalf("got %v, want [b c b]", got)
		}
	})
	t.Run("failover spills to the next member when the first is full", func(t *testing.T) {
		h := newHarness(t)
		gA := newGate(h.env)
		h.activate(oneGroup(Failover, 0, 0, cl("a", 1, &fakeEngine{rows: 1, gate: gA}), cl("b", 5, &fakeEngine{rows: 1})))
		held := h.async(t.Context(), sel("select 1"))
		eventually(t, "a busy", func() bool { return h.core.Running("a") == 1 })
		mustRun(t, h)
		if r := h.recs.last(t); r.Cluster != "b" {
			t.Fatalf("want spill to b, got %s", r.Cluster)
		}
		gA.release()
		if _, err := held.result(t); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("leastLoaded picks the member with the lowest load", func(t *testing.T) {
		h := newHarness(t)
		gA := newGate(h.env)
		h.activate(oneGroup(LeastLoaded, 0, 0, cl("a", 4, &fakeEngine{rows: 1, gate: gA}), cl("b", 4, &fakeEngine{rows: 1})))
		held := h.async(t.Context(), sel("select 1")) // a is first in order, so it takes the first one
		eventually(t, "a busy", func() bool { return h.core.Running("a") == 1 })
		mustRun(t, h)
		mustRun(t, h)
		gA.release()
		if _, err := held.result(t); err != nil {
			t.Fatal(err)
		}
		got := clustersOf(t, h, 3)
		if got[0] != "b" || got[1] != "b" || got[2] != "a" {
			t.Fatalf("got %v, want b, b while a was loaded", got)
		}
	})
	t.Run("weighted follows the weights", func(t *testing.T) {
		h := newHarness(t)
		spec := oneGroup(Weighted, 0, 0, cl("a", 5, &fakeEngine{rows: 1}), cl("b", 5, &fakeEngine{rows: 1}))
		spec.Groups[0].Members[0].Weight = 9
		spec.Groups[0].Members[1].Weight = 1
		h.activate(spec)
		n := 2000
		for i := 0; i < n; i++ {
			mustRun(t, h)
		}
		a := 0
		for _, c := range clustersOf(t, h, n) {
			if c == "a" {
				a++
			}
		}
		// Expect 90%; 6 standard deviations is about +-4%.
		if a < n*86/100 || a > n*94/100 {
			t.Fatalf("a got %d of %d, want about 90%%", a, n)
		}
	})
	t.Run("no usable member fails at once", func(t *testing.T) {
		h := newHarness(t)
		rt := h.activate(oneGroup(RoundRobin, 10, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
		rt.SetHealthy("a", false)
		_, err := h.run(t.Context(), sel("select 1"))
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != query.CodeEngine || !qe.Retryable {
			t.Fatalf("got %v", err)
		}
	})
}

func mustRun(t *testing.T, h *harness) {
	t.Helper()
	if _, err := h.run(t.Context(), sel("select 1")); err != nil {
		t.Fatal(err)
	}
}

func TestQueueFull(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	eng := &fakeEngine{rows: 1, gate: g}
	h.activate(oneGroup(RoundRobin, 1, time.Minute, cl("a", 1, eng)))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "first running", func() bool { return h.core.Running("a") == 1 })
	queued := h.async(t.Context(), sel("select 2"))
	eventually(t, "second queued", func() bool { return h.core.Queued("g") == 1 })
	_, err := h.run(t.Context(), sel("select 3"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeQueueFull || !qe.Retryable {
		t.Fatalf("want retryable CodeQueueFull, got %v", err)
	}
	if v := testutil.ToFloat64(h.core.metrics.rejections.WithLabelValues("g", "full")); v != 1 {
		t.Fatalf("rejections{full} = %v", v)
	}
	if v := testutil.ToFloat64(h.core.metrics.queued.WithLabelValues("g")); v != 1 {
		t.Fatalf("queued gauge = %v", v)
	}
	g.release()
	for _, o := range []*outcome{running, queued} {
		if n, err := o.result(t); err != nil || n != 1 {
			t.Fatalf("got %d, %v", n, err)
		}
	}
	if eng.peak.Load() != 1 {
		t.Fatalf("engine saw %d at once, cap is 1", eng.peak.Load())
	}
	if h.core.Running("a") != 0 || h.core.Queued("g") != 0 {
		t.Fatal("slots or queue not drained")
	}
	if testutil.CollectAndCount(h.reg, "queryflux_queue_duration_seconds") == 0 {
		t.Fatal("queue duration not recorded")
	}
	// The queued query waited for the first; its record says so.
	var waited bool
	for _, r := range h.recs.all() {
		waited = waited || (r.SQL == "select 2" && r.QueueMs >= 0 && r.Status == StatusSucceeded)
	}
	if !waited {
		t.Fatalf("no record for the queued query: %+v", h.recs.all())
	}
}

func TestNoQueueMeansRejectAtOnce(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	h.activate(oneGroup(RoundRobin, 0, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "first running", func() bool { return h.core.Running("a") == 1 })
	_, err := h.run(t.Context(), sel("select 2"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeQueueFull {
		t.Fatalf("got %v", err)
	}
	g.release()
	_, _ = running.result(t)
}

func TestCapacityWaitTimeout(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	h.activate(oneGroup(RoundRobin, 5, 60*time.Millisecond, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "first running", func() bool { return h.core.Running("a") == 1 })
	start := h.env.Now()
	_, err := h.run(t.Context(), sel("select 2"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeCapacityTimeout || !qe.Retryable {
		t.Fatalf("want CodeCapacityTimeout, got %v", err)
	}
	if waited := h.env.Now().Sub(start); waited < 60*time.Millisecond {
		t.Fatalf("gave up after %v, before the 60ms timeout", waited)
	}
	if h.core.Queued("g") != 0 {
		t.Fatal("timed-out query still queued")
	}
	if v := testutil.ToFloat64(h.core.metrics.rejections.WithLabelValues("g", "timeout")); v != 1 {
		t.Fatalf("rejections{timeout} = %v", v)
	}
	if rec := h.recs.last(t); rec.ErrorCode != query.CodeCapacityTimeout || rec.Cluster != "" || rec.QueueMs < 60 {
		t.Fatalf("record: %+v", rec)
	}
	g.release()
	_, _ = running.result(t)
}

func TestQueueIsFIFO(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	eng := &fakeEngine{rows: 1, gate: g}
	h.activate(oneGroup(RoundRobin, 10, time.Minute, cl("a", 1, eng)))
	first := h.async(t.Context(), sel("select 0"))
	eventually(t, "first running", func() bool { return h.core.Running("a") == 1 })
	var waiting []*outcome
	for i := 1; i <= 4; i++ {
		waiting = append(waiting, h.async(t.Context(), sel("select "+string(rune('0'+i)))))
		eventually(t, "queued", func() bool { return h.core.Queued("g") == i })
	}
	g.release()
	for _, o := range append([]*outcome{first}, waiting...) {
		if _, err := o.result(t); err != nil {
			t.Fatal(err)
		}
	}
	eng.mu.Lock()
	order := append([]string(nil), eng.order...)
	eng.mu.Unlock()
	for i, sql := range order {
		if sql != "select "+string(rune('0'+i)) {
			t.Fatalf("run order %v is not arrival order", order)
		}
	}
}

func TestCancellationReleasesTheSlot(t *testing.T) {
	t.Run("while running", func(t *testing.T) {
		h := newHarness(t)
		g := newGate(h.env)
		h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
		ctx, cancel := h.env.WithCancel(t.Context())
		o := h.async(ctx, sel("select 1"))
		eventually(t, "running", func() bool { return h.core.Running("a") == 1 })
		cancel()
		if _, err := o.result(t); !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
		if h.core.Running("a") != 0 {
			t.Fatal("slot not released")
		}
		if rec := h.recs.last(t); rec.Status != StatusCancelled || rec.Cluster != "a" {
			t.Fatalf("record: %+v", rec)
		}
		g.release()
		mustRun(t, h) // the slot is usable again
	})
	t.Run("while queued", func(t *testing.T) {
		h := newHarness(t)
		g := newGate(h.env)
		h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
		running := h.async(t.Context(), sel("select 1"))
		eventually(t, "running", func() bool { return h.core.Running("a") == 1 })
		ctx, cancel := h.env.WithCancel(t.Context())
		o := h.async(ctx, sel("select 2"))
		eventually(t, "queued", func() bool { return h.core.Queued("g") == 1 })
		cancel()
		if _, err := o.result(t); !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
		if h.core.Queued("g") != 0 || h.core.Running("a") != 1 {
			t.Fatalf("queued=%d running=%d", h.core.Queued("g"), h.core.Running("a"))
		}
		g.release()
		_, _ = running.result(t)
	})
	t.Run("closing a stream early", func(t *testing.T) {
		h := newHarness(t)
		h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 3})))
		rows, err := h.core.Execute(t.Context(), sel("select 1"))
		if err != nil {
			t.Fatal(err)
		}
		if h.core.Running("a") != 1 {
			t.Fatal("a streaming query holds its slot")
		}
		_ = rows.Close()
		if h.core.Running("a") != 0 {
			t.Fatal("slot not released on Close")
		}
		if rec := h.recs.last(t); rec.Status != StatusCancelled {
			t.Fatalf("record: %+v", rec)
		}
	})
}

func TestActivationSwapWithQueryInFlight(t *testing.T) {
	h := newHarness(t)
	if h.core.Ready() {
		t.Fatal("ready before activation")
	}
	if _, err := h.core.Execute(NoWait(t.Context()), sel("select 1")); err != query.ErrNotConfigured {
		t.Fatalf("a query that must not wait, before the first activation: want ErrNotConfigured, got %v", err)
	}
	g := newGate(h.env)
	old := &fakeEngine{rows: 2, gate: g}
	spec1 := oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, old))
	spec1.OwnsEngines = true
	rt1 := h.activate(spec1)
	if !h.core.Ready() {
		t.Fatal("not ready after activation")
	}
	inflight := h.async(t.Context(), sel("select 1"))
	eventually(t, "running on rt1", func() bool { return rt1.Inflight() == 1 && old.executing.Load() == 1 })

	fresh := &fakeEngine{rows: 5}
	spec2 := oneGroup(RoundRobin, 5, time.Minute, cl("b", 3, fresh))
	spec2.OwnsEngines = true
	rt2 := h.activate(spec2)
	if h.core.Runtime() != rt2 {
		t.Fatal("new runtime not active")
	}
	if n, err := h.run(t.Context(), sel("select 2")); err != nil || n != 5 {
		t.Fatalf("new query: %d %v", n, err)
	}
	if old.closed.Load() || rt1.Closed() {
		t.Fatal("old engines closed while a query still runs on them")
	}
	g.release()
	if n, err := inflight.result(t); err != nil || n != 2 {
		t.Fatalf("in-flight query must finish on its own runtime: %d %v", n, err)
	}
	if !old.closed.Load() || !rt1.Closed() {
		t.Fatal("old runtime not closed after its last query")
	}
	if fresh.closed.Load() {
		t.Fatal("active engines closed")
	}
	recs := h.recs.all()
	if recs[0].Cluster != "b" || recs[1].Cluster != "a" {
		t.Fatalf("records: %+v", recs)
	}
}

func TestRecordFields(t *testing.T) {
	h := newHarness(t)
	spec := oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 7}))
	spec.Routers = []Router{&ProtocolRouter{ByProtocol: map[string]string{query.ProtocolPostgres: "g"}}}
	h.activate(spec)
	req := &query.Request{SQL: "select 7", User: "bob", Protocol: query.ProtocolPostgres, Database: "db"}
	if _, err := h.run(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := h.recs.last(t)
	if r.QueryID == "" || r.User != "bob" || r.Protocol != "postgres" || r.Database != "db" || r.Group != "g" ||
		r.Cluster != "a" || r.SQL != "select 7" || r.Status != StatusSucceeded || r.Rows != 7 || r.Bytes < 56 ||
		r.CacheHit || len(r.Trace) != 1 || !r.Trace[0].Matched || r.End.Before(r.Start) {
		t.Fatalf("record: %+v", r)
	}
	if v := h.core.metrics.series("g", "a").ok.Load(); v != 1 {
		t.Fatalf("queries_total = %v", v)
	}
	if v := h.core.metrics.series("g", "a").running.Load(); v != 0 {
		t.Fatalf("running gauge = %v", v)
	}
}

func TestEngineErrorGetsSQLState(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{fail: errors.New("connection refused")})))
	_, err := h.run(t.Context(), sel("select 1"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeEngine {
		t.Fatalf("got %v", err)
	}
	if h.core.Running("a") != 0 {
		t.Fatal("slot leaked on engine error")
	}
	if rec := h.recs.last(t); rec.Status != StatusFailed || rec.Cluster != "a" {
		t.Fatalf("record %+v", rec)
	}
}

func TestAdmitForPassthrough(t *testing.T) {
	h := newHarness(t)
	eng := &fakeEngine{rows: 1}
	h.activate(oneGroup(RoundRobin, 0, 0, cl("a", 1, eng)))
	adm, err := h.core.Admit(t.Context(), sel("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	if adm.Cluster != "a" || adm.Engine != eng || adm.Group != "g" || h.core.Running("a") != 1 {
		t.Fatalf("admission %+v", adm)
	}
	if _, err := h.core.Admit(t.Context(), sel("select 2")); err == nil {
		t.Fatal("second admission must be refused: cap 1, no queue")
	}
	adm.Finish(10, 100, nil)
	if h.core.Running("a") != 0 {
		t.Fatal("Finish did not release the slot")
	}
	if r := h.recs.last(t); r.Rows != 10 || r.Bytes != 100 || r.Status != StatusSucceeded {
		t.Fatalf("record %+v", r)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("finishing twice must panic")
		}
	}()
	adm.Finish(0, 0, nil)
}

// noResultEngine answers like an INSERT: no schema, only a tag.
type noResultEngine struct{ fakeEngine }

func (e *noResultEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return &tagOnly{}, nil
}

type tagOnly struct{ emptyRows }

func (*tagOnly) Schema() *arrow.Schema { return nil }
func (*tagOnly) Tag() string           { return "INSERT 0 1" }

func TestStatementWithoutResultSucceedsOnClose(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 0, 0, cl("a", 1, &noResultEngine{})))
	rows, err := h.core.Execute(t.Context(), sel("insert into t values (1)"))
	if err != nil {
		t.Fatal(err)
	}
	if rows.Schema() != nil || rows.Tag() != "INSERT 0 1" {
		t.Fatal("schema/tag not passed through")
	}
	_ = rows.Close()
	if r := h.recs.last(t); r.Status != StatusSucceeded || h.core.Running("a") != 0 {
		t.Fatalf("record %+v", r)
	}
}

func TestGroupQueryTimeout(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env) // never opened: the query runs until the timeout
	spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 1, gate: g}))
	spec.Groups[0].QueryTimeout = 50 * time.Millisecond
	h.activate(spec)
	_, err := h.run(t.Context(), sel("select 1"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeQueryTimeout || !strings.Contains(qe.Message, "query timeout") {
		t.Fatalf("want a query-timeout error, got %v", err)
	}
	if r := h.recs.last(t); r.Status != StatusFailed || h.core.Running("a") != 0 {
		t.Fatalf("record %+v", r)
	}
}

// The core's series of each (group, cluster) are its own, also when queries alternate between
// clusters (series keeps the last one it returned at hand): every finished query counts under
// the cluster that ran it, and every running gauge goes back to 0.
func TestMetricsFollowEachCluster(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 2, &fakeEngine{}), cl("b", 2, &fakeEngine{})))
	for range 5 {
		if _, err := h.run(t.Context(), sel("select 1")); err != nil {
			t.Fatal(err)
		}
	}
	ran := map[string]float64{}
	for _, r := range h.recs.all() {
		ran[r.Cluster]++
	}
	if ran["a"] == 0 || ran["b"] == 0 {
		t.Fatalf("round robin ran %v: want both clusters", ran)
	}
	for _, name := range []string{"a", "b"} {
		if v := float64(h.core.metrics.series("g", name).ok.Load()); v != ran[name] {
			t.Errorf("queries_total{cluster=%q} = %v, want %v", name, v, ran[name])
		}
		if v := h.core.metrics.series("g", name).running.Load(); v != 0 {
			t.Errorf("running{cluster=%q} = %v, want 0", name, v)
		}
	}
}

// A runtime's cluster keeps the running count of the core that counted on it last (countOf):
// one runtime activated on two cores still counts each core's slots apart, both ways round,
// and a slot given back leaves its own core's count.
func TestRunningCountPerCoreOfASharedRuntime(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	rt, err := NewRuntime(oneGroup(RoundRobin, 0, 0, cl("c", 1, &fakeEngine{})))
	if err != nil {
		t.Fatal(err)
	}
	a.core.Activate(rt)
	b.core.Activate(rt)
	ctx := context.Background()
	admA, err := a.core.Admit(ctx, sel("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	admB, err := b.core.Admit(ctx, sel("select 1")) // b's own slot: its count is not a's
	if err != nil {
		t.Fatalf("the second core found the cluster full: %v", err)
	}
	if a.core.Running("c") != 1 || b.core.Running("c") != 1 {
		t.Fatalf("running: a %d, b %d, want 1 each", a.core.Running("c"), b.core.Running("c"))
	}
	admA.Finish(0, 0, nil)
	if a.core.Running("c") != 0 || b.core.Running("c") != 1 {
		t.Fatalf("after a's finish: a %d, b %d, want 0 and 1", a.core.Running("c"), b.core.Running("c"))
	}
	admB.Finish(0, 0, nil)
	if admA, err = a.core.Admit(ctx, sel("select 1")); err != nil || b.core.Running("c") != 0 {
		t.Fatalf("a again: %v; b running %d", err, b.core.Running("c"))
	}
	admA.Finish(0, 0, nil)
}

package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// testEnv is the real Env with a clock that tests can move forward (for cache TTLs).
type testEnv struct {
	env.Env
	offset atomic.Int64
}

func newTestEnv() *testEnv {
	return &testEnv{Env: env.Real(slog.New(slog.DiscardHandler))}
}

func (e *testEnv) Now() time.Time          { return e.Env.Now().Add(time.Duration(e.offset.Load())) }
func (e *testEnv) advance(d time.Duration) { e.offset.Add(int64(d)) }

// gate blocks engine queries until opened.
type gate struct {
	sig  env.Signal
	open atomic.Bool
}

func newGate(e env.Env) *gate { return &gate{sig: e.NewSignal()} }

func (g *gate) release() { g.open.Store(true); g.sig.Notify() }

func (g *gate) wait(ctx context.Context) error {
	for !g.open.Load() {
		seen := g.sig.Seq()
		if g.open.Load() {
			break
		}
		if err := g.sig.Wait(ctx, seen); err != nil {
			return err
		}
	}
	return nil
}

// fakeEngine returns one batch of Rows int64 values. With a gate, each query's first Next
// blocks until the gate opens (or its ctx ends), so tests can hold queries "running".
type fakeEngine struct {
	name      string
	rows      int
	gate      *gate
	fail      error
	executes  atomic.Int64
	executing atomic.Int64
	peak      atomic.Int64
	closed    atomic.Bool
	mu        sync.Mutex
	order     []string // SQL in the order Execute was called
}

func (f *fakeEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	f.executes.Add(1)
	f.mu.Lock()
	f.order = append(f.order, q.SQL)
	f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	n := f.executing.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return &fakeRows{f: f, ctx: ctx}, nil
}

func (f *fakeEngine) Ping(ctx context.Context) error { return nil }
func (f *fakeEngine) Close() error                   { f.closed.Store(true); return nil }

var fakeSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

type fakeRows struct {
	f      *fakeEngine
	ctx    context.Context // the engine-side ctx, as a real engine keeps it
	sent   bool
	batch  arrow.RecordBatch
	closed bool
}

func (r *fakeRows) Schema() *arrow.Schema { return fakeSchema }
func (r *fakeRows) Tag() string {
	if r.sent {
		return fmt.Sprintf("SELECT %d", r.f.rows)
	}
	return ""
}

func (r *fakeRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.f.gate != nil {
		if err := r.f.gate.wait(r.ctx); err != nil {
			return nil, err
		}
	}
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	if r.sent {
		return nil, io.EOF
	}
	r.sent = true
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < r.f.rows; i++ {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	r.batch = array.NewRecordBatch(fakeSchema, []arrow.Array{col}, int64(r.f.rows))
	return r.batch, nil
}

func (r *fakeRows) Close() error {
	if !r.closed {
		r.closed = true
		r.f.executing.Add(-1)
		if r.batch != nil {
			r.batch.Release()
		}
	}
	return nil
}

// recorder collects finished-query records.
type recorder struct {
	mu   sync.Mutex
	recs []Record
}

func (r *recorder) add(rec *Record) { r.mu.Lock(); r.recs = append(r.recs, *rec); r.mu.Unlock() }
func (r *recorder) all() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}
func (r *recorder) last(t *testing.T) Record {
	t.Helper()
	all := r.all()
	if len(all) == 0 {
		t.Fatal("no record reported")
	}
	return all[len(all)-1]
}

type harness struct {
	t    *testing.T
	env  *testEnv
	core *Core
	reg  *prometheus.Registry
	recs *recorder
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, env: newTestEnv(), reg: prometheus.NewRegistry(), recs: &recorder{}}
	h.core = New(Options{Env: h.env, Registerer: h.reg, OnFinish: h.recs.add, GuardPoll: 20 * time.Millisecond})
	// Registered first, so it runs last: after the test's own cleanups closed what they hold.
	t.Cleanup(func() { checkNoLeaks(t, h.core) })
	return h
}

// checkNoLeaks fails t when core still has admissions or result streams open.
func checkNoLeaks(t *testing.T, core *Core) {
	t.Helper()
	if open := core.Unclosed(); len(open) > 0 {
		t.Errorf("the test left %d unfinished: %q", len(open), open)
	}
}

func (h *harness) activate(spec RuntimeSpec) *Runtime {
	h.t.Helper()
	rt, err := NewRuntime(spec)
	if err != nil {
		h.t.Fatalf("NewRuntime: %v", err)
	}
	h.core.Activate(rt)
	return rt
}

// run executes sql and drains it, returning the row count or the error.
func (h *harness) run(ctx context.Context, req *query.Request) (int64, error) {
	rows, err := h.core.Execute(ctx, req)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for {
		rec, err := rows.Next(ctx)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += rec.NumRows()
	}
}

// async starts req in a new task and returns a handle to its outcome.
func (h *harness) async(ctx context.Context, req *query.Request) *outcome {
	o := &outcome{done: h.env.NewSignal()}
	h.env.Go(ctx, "query", func(ctx context.Context) {
		n, err := h.run(ctx, req)
		o.mu.Lock()
		o.n, o.err, o.finished = n, err, true
		o.mu.Unlock()
		o.done.Notify()
	})
	return o
}

type outcome struct {
	mu       sync.Mutex
	done     env.Signal
	finished bool
	n        int64
	err      error
}

func (o *outcome) result(t *testing.T) (int64, error) {
	t.Helper()
	ctx, cancel := env.Real(nil).WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		seen := o.done.Seq()
		o.mu.Lock()
		if o.finished {
			defer o.mu.Unlock()
			return o.n, o.err
		}
		o.mu.Unlock()
		if err := o.done.Wait(ctx, seen); err != nil {
			t.Fatal("query did not finish in 10s")
		}
	}
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	e := env.Real(nil)
	for i := 0; i < 10000; i++ {
		if cond() {
			return
		}
		_ = e.Sleep(context.Background(), time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func sel(sql string) *query.Request {
	return &query.Request{SQL: sql, User: "alice", Protocol: query.ProtocolPostgres}
}

// oneGroup is a runtime spec with one group "g" over the given clusters.
func oneGroup(strategy string, maxQueued int, wait time.Duration, clusters ...ClusterSpec) RuntimeSpec {
	g := GroupSpec{Name: "g", Strategy: strategy, MaxQueuedQueries: maxQueued, CapacityWaitTimeout: wait}
	for _, c := range clusters {
		g.Members = append(g.Members, MemberSpec{Cluster: c.Name})
	}
	return RuntimeSpec{Clusters: clusters, Groups: []GroupSpec{g}, Fallback: "g"}
}

func cl(name string, cap int, e query.Engine) ClusterSpec {
	return ClusterSpec{Name: name, Enabled: true, MaxRunningQueries: cap, Engine: e}
}

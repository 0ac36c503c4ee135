// Package simengine is a query.Engine for the simulator: it does no real work. Each query runs
// for a duration drawn from a distribution and fails with a set probability, both through the
// injected env.Env (Sleep, Rand), so a seed decides every outcome. It counts the queries executing
// on it right now, which is the engine's own view for the oracle "executing on engine <= cap".
//
// Like a real engine, a query runs on the engine's side (a backend task of the engine's own Env),
// not in its client: a client that cancels stops it, and a client that dies (its task unwound by
// a crash: its process and its sockets are gone) leaves it to the engine's ClientLoss rule: run
// to its end (MySQL), end at the next look at the client's socket (PostgreSQL's
// client_connection_check_interval), end a timeout later (Trino's client timeout) or end with
// the client (DuckDB, embedded in it). Fence stops the queries of a lease at any time (the
// control plane's engine fence). A client that is merely frozen keeps its socket, so its query
// runs on until the client cancels it.
//
// It touches nothing but the Env it is given.
package simengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// Distribution draws a query duration.
type Distribution interface {
	Sample(r env.Rand) time.Duration
}

// Constant always takes D.
type Constant struct{ D time.Duration }

func (c Constant) Sample(env.Rand) time.Duration { return c.D }

// Uniform takes a duration uniformly in [Min, Max].
type Uniform struct{ Min, Max time.Duration }

func (u Uniform) Sample(r env.Rand) time.Duration {
	if u.Max <= u.Min {
		return u.Min
	}
	return u.Min + time.Duration(r.Int64N(int64(u.Max-u.Min)+1))
}

// Exponential has mean Mean, capped at Max when Max > 0 (a named limit on the tail).
type Exponential struct{ Mean, Max time.Duration }

func (e Exponential) Sample(r env.Rand) time.Duration {
	u := r.Float64()
	d := time.Duration(-math.Log(1-u) * float64(e.Mean))
	if e.Max > 0 && d > e.Max {
		d = e.Max
	}
	return d
}

// LogNormal has the given median and shape Sigma, capped at Max when Max > 0.
type LogNormal struct {
	Median time.Duration
	Sigma  float64
	Max    time.Duration
}

func (l LogNormal) Sample(r env.Rand) time.Duration {
	// Box-Muller from two uniforms of the seeded source.
	u1, u2 := r.Float64(), r.Float64()
	z := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
	d := time.Duration(float64(l.Median) * math.Exp(l.Sigma*z))
	if l.Max > 0 && d > l.Max {
		d = l.Max
	}
	return d
}

// Params shape an engine's behaviour.
type Params struct {
	// Duration is how long a query runs before its result is ready; nil means instant.
	Duration Distribution
	// FailureRate is the probability in [0, 1] that a query fails after running its duration.
	FailureRate float64
	// Rows is how many rows the result has (one int64 column "n"); 0 means 1.
	Rows int
	// ClientLoss is what the engine does with a running query whose client died.
	ClientLoss ClientLoss
}

// ClientLoss is what an engine does with a running query whose client went away without a word
// (its process died, so its socket closed). The zero value runs the query to its end, as MySQL
// and MariaDB run a statement whose client was killed.
type ClientLoss struct {
	// CheckEvery > 0: the engine looks at the client's socket every CheckEvery from the query's
	// start and ends the query at the first look after the client went away (PostgreSQL's
	// client_connection_check_interval).
	CheckEvery time.Duration
	// Timeout > 0: the query ends that long after its client went away (Trino's
	// query.client.timeout).
	Timeout time.Duration
	// Embedded: the engine runs inside the client's process, so the query ends with it (DuckDB).
	Embedded bool
}

// lost reports whether l ends queries of dead clients at all.
func (l ClientLoss) lost() bool { return l.CheckEvery > 0 || l.Timeout > 0 || l.Embedded }

// endAfter is when a query started at start ends if its client went away at gone (the zero time
// when l runs it to its end).
func (l ClientLoss) endAfter(start, gone time.Time) time.Time {
	var end time.Time
	earliest := func(t time.Time) {
		if end.IsZero() || t.Before(end) {
			end = t
		}
	}
	if l.Embedded {
		earliest(gone)
	}
	if l.Timeout > 0 {
		earliest(gone.Add(l.Timeout))
	}
	if l.CheckEvery > 0 {
		looks := (gone.Sub(start) + l.CheckEvery - 1) / l.CheckEvery
		earliest(start.Add(looks * l.CheckEvery))
	}
	return end
}

// Stats are an engine's counters.
type Stats struct {
	Executing    int   // queries between Execute and Rows.Close right now
	MaxExecuting int   // the most ever executing at once
	Started      int64 // Execute calls
	Failed       int64 // simulated failures
	Cancelled    int64 // queries whose ctx ended while running
	Succeeded    int64 // results returned
	Orphaned     int64 // queries whose client went away without cancelling them
	Fenced       int64 // queries stopped by Fence
	Pings        int64 // health checks (Ping calls)
}

// Engine is a simulated cluster.
type Engine struct {
	env    env.Env
	name   string
	params Params

	mu       sync.Mutex
	stats    Stats
	nextID   uint64
	backends map[uint64]*backend // running or holding a result, by id
	// OnChange, when set, is called (without locks held) after the executing count changes,
	// so an oracle can check it at every instant.
	onChange func(name string, executing int)
}

// New returns an engine called name (shown in errors and passed to OnChange).
func New(e env.Env, name string, p Params) *Engine {
	if e == nil {
		panic("simengine: nil env")
	}
	if p.FailureRate < 0 || p.FailureRate > 1 {
		panic(fmt.Sprintf("simengine: failure rate %v outside [0, 1]", p.FailureRate))
	}
	if l := p.ClientLoss; l.CheckEvery < 0 || l.Timeout < 0 {
		panic(fmt.Sprintf("simengine: negative client-loss interval %+v", l))
	}
	return &Engine{env: e, name: name, params: p, backends: map[uint64]*backend{}}
}

// OnChange registers fn to be told the executing count after every change.
func (e *Engine) OnChange(fn func(name string, executing int)) {
	e.mu.Lock()
	e.onChange = fn
	e.mu.Unlock()
}

// Name is the engine's name.
func (e *Engine) Name() string { return e.name }

// Executing is the number of queries executing on this engine right now.
func (e *Engine) Executing() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats.Executing
}

// Stats returns a copy of the counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

func (e *Engine) adjust(delta int, outcome func(*Stats)) {
	e.mu.Lock()
	e.stats.Executing += delta
	if e.stats.Executing < 0 {
		panic(fmt.Sprintf("simengine %s: executing count went negative: %+v", e.name, e.stats))
	}
	if e.stats.Executing > e.stats.MaxExecuting {
		e.stats.MaxExecuting = e.stats.Executing
	}
	if outcome != nil {
		outcome(&e.stats)
	}
	n, fn := e.stats.Executing, e.onChange
	e.mu.Unlock()
	if fn != nil && delta != 0 {
		fn(e.name, n)
	}
}

// backend is one query on the engine's side.
type backend struct {
	id       uint64
	tag      string
	d        time.Duration // the query's work
	start    time.Time     // the engine's clock: when the query started
	end      time.Time     // when the query's work is done
	fail     bool
	ready    bool      // done, the result waits for the client
	ended    bool      // no longer executing (counted out)
	orphaned time.Time // when the client went away (zero while it is there)
	cause    error     // why it ended early (cancelled, fenced)
	changed  env.Signal
	stop     context.CancelFunc
}

// Execute runs q in a session tagged with ctx's engine tag (query.EngineTag: the lease that
// admitted it), as the real engines do.
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return e.ExecuteTagged(ctx, q, query.EngineTag(ctx))
}

// ExecuteTagged runs q in a session tagged with tag (the lease that admitted it, for Fence):
// the engine's backend runs for a drawn duration, then fails or returns a small result. The
// query counts as executing until the returned Rows are closed (or until it fails or stops).
// Cancelling ctx stops it; the caller's task unwinding without returning (its node crashed)
// leaves it running on the engine.
func (e *Engine) ExecuteTagged(ctx context.Context, q *query.Request, tag string) (query.Rows, error) {
	b := e.begin(tag, q)
	if !b.ready && !b.ended {
		returned := false
		defer func() {
			if !returned {
				e.orphan(b) // the client's task is unwinding: its process died, nobody cancels
			}
		}()
		err := e.wait(ctx, b)
		returned = true
		if err != nil {
			e.finish(b, context.Cause(ctx), func(s *Stats) { s.Cancelled++ }) // the client cancels it
			return nil, err
		}
	}
	e.mu.Lock()
	ended, cause, fail := b.ended, b.cause, b.fail
	e.mu.Unlock()
	switch {
	case ended:
		return nil, &query.Error{Code: query.CodeEngine, Message: fmt.Sprintf("simulated engine %s stopped the query: %v", e.name, cause)}
	case fail:
		e.finish(b, nil, func(s *Stats) { s.Failed++ })
		return nil, &query.Error{Code: query.CodeEngine, Message: "simulated engine failure on " + e.name}
	}
	n := e.params.Rows
	if n <= 0 {
		n = 1
	}
	return &rows{engine: e, b: b, batch: resultBatch(n)}, nil
}

// begin counts a new query in and starts its backend (none for an instant query).
func (e *Engine) begin(tag string, q *query.Request) *backend {
	d, slept := SleepOf(q.SQL)
	if !slept && e.params.Duration != nil {
		d = e.params.Duration.Sample(e.env.Rand())
	}
	fail := e.params.FailureRate > 0 && e.env.Rand().Float64() < e.params.FailureRate
	e.mu.Lock()
	e.nextID++
	now := e.env.Now()
	b := &backend{id: e.nextID, tag: tag, d: d, start: now, end: now.Add(d), fail: fail, ready: d <= 0, changed: e.env.NewSignal()}
	e.backends[b.id] = b
	e.mu.Unlock()
	e.adjust(+1, func(s *Stats) { s.Started++ })
	if d > 0 {
		bctx, stop := e.env.WithCancel(context.Background())
		b.stop = stop
		e.env.Go(bctx, "engine-"+e.name, func(ctx context.Context) { e.run(ctx, b) })
	}
	return b
}

// SleepOf is the duration of a `select pg_sleep(S)` statement (S seconds, as PostgreSQL sleeps),
// which the engine runs for that long whatever its distribution; false for any other statement.
// A replayed history runs each query for its recorded time this way.
func SleepOf(sql string) (time.Duration, bool) {
	const prefix = "select pg_sleep("
	if len(sql) <= len(prefix) || !strings.EqualFold(sql[:len(prefix)], prefix) || !strings.HasSuffix(sql, ")") {
		return 0, false
	}
	secs, err := strconv.ParseFloat(sql[len(prefix):len(sql)-1], 64)
	if err != nil || secs < 0 || math.IsInf(secs, 0) || math.IsNaN(secs) {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Microsecond), true
}

// run is the backend: it works until the query's end (or until the ClientLoss rule ends it once
// its client went away), unless it is stopped first.
func (e *Engine) run(ctx context.Context, b *backend) {
	defer b.stop()
	if !e.params.ClientLoss.lost() {
		if e.env.Sleep(ctx, b.d) != nil {
			return // stopped: whoever stopped it counted it out
		}
	} else if !e.runOrphanable(ctx, b) {
		return
	}
	e.mu.Lock()
	orphaned := !b.orphaned.IsZero()
	b.ready = true
	e.mu.Unlock()
	if orphaned { // it ends when it writes to the dead client, or when the engine saw it gone
		e.finish(b, errOrphaned, nil)
	}
	b.changed.Notify()
}

// runOrphanable waits for b's end, or for the end the ClientLoss rule gives it once its client
// went away; false when b was stopped first.
func (e *Engine) runOrphanable(ctx context.Context, b *backend) bool {
	for {
		seen := b.changed.Seq()
		e.mu.Lock()
		until, orphaned, ended := b.end, b.orphaned, b.ended
		e.mu.Unlock()
		if ended {
			return false
		}
		if end := e.params.ClientLoss.endAfter(b.start, orphaned); !orphaned.IsZero() && !end.IsZero() {
			until = minTime(until, end)
		}
		left := until.Sub(e.env.Now())
		if left <= 0 {
			return true
		}
		wctx, cancel := e.env.WithTimeout(ctx, left)
		_ = b.changed.Wait(wctx, seen) // the time is up, or something changed: look again
		cancel()
		if ctx.Err() != nil {
			return false // stopped: whoever stopped it counted it out
		}
	}
}

var (
	errOrphaned = errors.New("the client went away")
	errFenced   = errors.New("fenced: its lease was reclaimed")
)

// wait blocks the client until b's result is ready or b ended, or ctx ends.
func (e *Engine) wait(ctx context.Context, b *backend) error {
	for {
		seen := b.changed.Seq()
		e.mu.Lock()
		done := b.ready || b.ended
		e.mu.Unlock()
		if done {
			return nil
		}
		if err := b.changed.Wait(ctx, seen); err != nil {
			return err
		}
	}
}

// orphan records that b's client went away without a word.
func (e *Engine) orphan(b *backend) {
	e.mu.Lock()
	gone := b.ended
	if !gone && b.orphaned.IsZero() {
		b.orphaned = e.env.Now()
	}
	e.mu.Unlock()
	if !gone {
		e.adjust(0, func(s *Stats) { s.Orphaned++ })
	}
	b.changed.Notify()
}

// finish counts b out once (outcome updates the counters) and stops its backend.
func (e *Engine) finish(b *backend, cause error, outcome func(*Stats)) {
	e.mu.Lock()
	if b.ended {
		e.mu.Unlock()
		return
	}
	b.ended, b.cause = true, cause
	delete(e.backends, b.id)
	e.mu.Unlock()
	e.adjust(-1, outcome)
	if b.stop != nil {
		b.stop()
	}
	b.changed.Notify()
}

// Fence stops every query whose session carries one of tags (the engine side of the control
// plane's fence: pg_terminate_backend by application_name, KILL QUERY, DELETE /v1/query) and
// returns how many it stopped. Nothing runs under those tags when it returns.
func (e *Engine) Fence(tags []string) int {
	want := map[string]bool{}
	for _, t := range tags {
		want[t] = true
	}
	e.mu.Lock()
	var hit []*backend
	for _, b := range e.backends { //determinism:ok sorted by id below
		if b.tag != "" && want[b.tag] {
			hit = append(hit, b)
		}
	}
	e.mu.Unlock()
	slices.SortFunc(hit, func(a, b *backend) int { return cmp.Compare(a.id, b.id) })
	for _, b := range hit {
		e.finish(b, errFenced, func(s *Stats) { s.Fenced++ })
	}
	return len(hit)
}

// Running returns how many queries execute under tag.
func (e *Engine) Running(tag string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, b := range e.backends { //determinism:ok a count
		if b.tag == tag {
			n++
		}
	}
	return n
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Ping always succeeds, and is counted (Stats.Pings).
func (e *Engine) Ping(ctx context.Context) error {
	e.mu.Lock()
	e.stats.Pings++
	e.mu.Unlock()
	return ctx.Err()
}

// Close does nothing: a simulated engine outlives config activations (the simulator shares one
// engine per cluster across runtimes, so its executing count is the whole node's view).
func (e *Engine) Close() error { return nil }

var resultSchema = arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)

func resultBatch(n int) arrow.RecordBatch {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(resultSchema, []arrow.Array{col}, int64(n))
}

type rows struct {
	engine *Engine
	b      *backend
	batch  arrow.RecordBatch
	sent   bool
	closed bool
	tag    string
}

func (r *rows) Schema() *arrow.Schema { return resultSchema }

func (r *rows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.closed {
		return nil, fmt.Errorf("simengine %s: Next after Close", r.engine.name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.engine.mu.Lock()
	ended, cause := r.b.ended, r.b.cause
	r.engine.mu.Unlock()
	if ended {
		return nil, &query.Error{Code: query.CodeEngine, Message: fmt.Sprintf("simulated engine %s stopped the query: %v", r.engine.name, cause)}
	}
	if r.sent {
		r.tag = fmt.Sprintf("SELECT %d", r.batch.NumRows())
		return nil, io.EOF
	}
	r.sent = true
	return r.batch, nil
}

func (r *rows) Tag() string { return r.tag }

func (r *rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.batch.Release()
	r.engine.finish(r.b, nil, func(s *Stats) { s.Succeeded++ })
	return nil
}

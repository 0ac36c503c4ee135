// Package simengine is a query.Engine for the simulator: it does no real work. Each query sleeps
// for a duration drawn from a distribution and fails with a set probability, both through the
// injected env.Env (Sleep, Rand), so a seed decides every outcome. It counts the queries executing
// on it right now, which is the engine's own view for the oracle "executing on engine <= cap".
//
// It touches nothing but the Env it is given.
package simengine

import (
	"context"
	"fmt"
	"io"
	"math"
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
}

// Stats are an engine's counters.
type Stats struct {
	Executing    int   // queries between Execute and Rows.Close right now
	MaxExecuting int   // the most ever executing at once
	Started      int64 // Execute calls
	Failed       int64 // simulated failures
	Cancelled    int64 // queries whose ctx ended while running
	Succeeded    int64 // results returned
}

// Engine is a simulated cluster.
type Engine struct {
	env    env.Env
	name   string
	params Params

	mu    sync.Mutex
	stats Stats
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
	return &Engine{env: e, name: name, params: p}
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

// Execute runs q: it sleeps for a drawn duration, then fails or returns a small result. The query
// counts as executing until the returned Rows are closed (or until it fails).
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	e.adjust(+1, func(s *Stats) { s.Started++ })
	var d time.Duration
	if e.params.Duration != nil {
		d = e.params.Duration.Sample(e.env.Rand())
	}
	fail := e.params.FailureRate > 0 && e.env.Rand().Float64() < e.params.FailureRate
	if d > 0 {
		if err := e.env.Sleep(ctx, d); err != nil {
			e.adjust(-1, func(s *Stats) { s.Cancelled++ })
			return nil, err
		}
	} else if err := ctx.Err(); err != nil {
		e.adjust(-1, func(s *Stats) { s.Cancelled++ })
		return nil, err
	}
	if fail {
		e.adjust(-1, func(s *Stats) { s.Failed++ })
		return nil, &query.Error{Code: query.CodeEngine, Message: "simulated engine failure on " + e.name}
	}
	n := e.params.Rows
	if n <= 0 {
		n = 1
	}
	return &rows{engine: e, batch: resultBatch(n)}, nil
}

// Ping always succeeds.
func (e *Engine) Ping(ctx context.Context) error { return ctx.Err() }

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
	r.engine.adjust(-1, func(s *Stats) { s.Succeeded++ })
	return nil
}

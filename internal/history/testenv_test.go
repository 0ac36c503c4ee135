package history

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// testEnv is a single-threaded deterministic env.Env for the uplink tests. Virtual time only
// moves in Sleep, which first runs the scheduled events that fall within the sleep (in time
// order). Go queues a task; Run runs the queued tasks one after another. Contexts are checked
// by polling Err, which is enough because nothing runs concurrently. Past the horizon, Sleep
// fails, which ends every loop.
type testEnv struct {
	t       testing.TB
	now     time.Time
	horizon time.Time
	events  []event
	tasks   []func()
	rnd     *testRand
}

type event struct {
	at  time.Time
	seq int
	fn  func()
}

var errHorizon = errors.New("testenv: past the horizon")

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestEnv(t testing.TB, seed uint64, horizon time.Duration) *testEnv {
	return &testEnv{t: t, now: testEpoch, horizon: testEpoch.Add(horizon), rnd: &testRand{r: rand.New(rand.NewPCG(seed, 1))}}
}

// At schedules fn at offset from the epoch.
func (e *testEnv) At(offset time.Duration, fn func()) {
	e.events = append(e.events, event{at: testEpoch.Add(offset), seq: len(e.events), fn: fn})
	sort.SliceStable(e.events, func(i, j int) bool { return e.events[i].at.Before(e.events[j].at) })
}

// Run runs queued tasks until none is left.
func (e *testEnv) Run() {
	for len(e.tasks) > 0 {
		task := e.tasks[0]
		e.tasks = e.tasks[1:]
		task()
	}
}

func (e *testEnv) Now() time.Time { return e.now }

func (e *testEnv) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	target := e.now.Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.Before(target) {
		target = dl
	}
	if target.After(e.horizon) {
		e.advance(e.horizon)
		return errHorizon
	}
	e.advance(target)
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// advance moves the clock to target, running due events on the way.
func (e *testEnv) advance(target time.Time) {
	for len(e.events) > 0 && !e.events[0].at.After(target) {
		ev := e.events[0]
		e.events = e.events[1:]
		if ev.at.After(e.now) {
			e.now = ev.at
		}
		ev.fn()
	}
	if target.After(e.now) {
		e.now = target
	}
}

func (e *testEnv) Go(ctx context.Context, name string, fn func(ctx context.Context)) {
	e.tasks = append(e.tasks, func() { fn(ctx) })
}

func (e *testEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := &testCtx{Context: ctx, env: e, deadline: e.now.Add(d), hasDeadline: true}
	return c, func() { c.cancelled = true }
}

func (e *testEnv) WithCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	c := &testCtx{Context: ctx, env: e}
	return c, func() { c.cancelled = true }
}

func (e *testEnv) NewSignal() env.Signal { return &testSignal{env: e} }
func (e *testEnv) Rand() env.Rand        { return e.rnd }
func (e *testEnv) Logger() *slog.Logger  { return slog.New(slog.DiscardHandler) }

// testCtx is a context whose deadline is on the virtual clock.
type testCtx struct {
	context.Context
	env         *testEnv
	deadline    time.Time
	hasDeadline bool
	cancelled   bool
}

func (c *testCtx) Deadline() (time.Time, bool) {
	pd, pok := c.Context.Deadline()
	switch {
	case c.hasDeadline && (!pok || c.deadline.Before(pd)):
		return c.deadline, true
	}
	return pd, pok
}

func (c *testCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.cancelled {
		return context.Canceled
	}
	if c.hasDeadline && !c.env.now.Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// testSignal: with one task at a time only a scheduled event can notify a waiter, so a wait
// runs the events due before its deadline until one notifies; a wait with no deadline that
// would block is a bug in the test or the code.
type testSignal struct {
	env *testEnv
	seq uint64
}

func (s *testSignal) Notify()     { s.seq++ }
func (s *testSignal) Seq() uint64 { return s.seq }
func (s *testSignal) Wait(ctx context.Context, seen uint64) error {
	e := s.env
	for s.seq == seen {
		if err := ctx.Err(); err != nil {
			return err
		}
		dl, ok := ctx.Deadline()
		if !ok {
			return errors.New("testenv: Signal.Wait would block forever")
		}
		if dl.After(e.horizon) {
			dl = e.horizon
		}
		if len(e.events) > 0 && !e.events[0].at.After(dl) {
			e.advance(e.events[0].at)
			continue
		}
		e.advance(dl)
		if !e.now.Before(e.horizon) {
			return errHorizon
		}
	}
	return nil
}

type testRand struct{ r *rand.Rand }

func (r *testRand) Uint64() uint64       { return r.r.Uint64() }
func (r *testRand) Float64() float64     { return r.r.Float64() }
func (r *testRand) Int64N(n int64) int64 { return r.r.Int64N(n) }
func (r *testRand) Read(p []byte) {
	for i := range p {
		p[i] = byte(r.r.Uint64())
	}
}

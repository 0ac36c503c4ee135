package env

import (
	"context"
	crand "crypto/rand"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Real returns the production Env: the wall clock, goroutines and the context package.
// logger may be nil, meaning slog's default text logger on stderr.
func Real(logger *slog.Logger) Env {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	e := &realEnv{log: logger}
	if path := os.Getenv(TestClockFileEnv); path != "" {
		logger.Warn("the clock follows a test fault file: never set this outside tests", "env", TestClockFileEnv, "file", path)
		e.clock = newTestClock(path)
	}
	return e
}

type realEnv struct {
	log   *slog.Logger
	rnd   realRand
	clock *testClock // nil unless the test clock hook is set (testclock.go)
}

func (e *realEnv) Now() time.Time {
	if e.clock != nil {
		return e.clock.now()
	}
	return time.Now()
}

func (e *realEnv) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if e.clock != nil {
		d = e.clock.scale(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *realEnv) Go(ctx context.Context, name string, fn func(ctx context.Context)) {
	go fn(ctx)
}

func (e *realEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if e.clock != nil {
		d = e.clock.scale(d)
	}
	return context.WithTimeout(ctx, d)
}

func (e *realEnv) WithCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

func (e *realEnv) NewSignal() Signal    { return &realSignal{ch: make(chan struct{})} }
func (e *realEnv) Rand() Rand           { return e.rnd }
func (e *realEnv) Logger() *slog.Logger { return e.log }

type realSignal struct {
	mu  sync.Mutex
	seq uint64
	ch  chan struct{} // closed and replaced on every Notify
}

func (s *realSignal) Notify() {
	s.mu.Lock()
	s.seq++
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

func (s *realSignal) Seq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

func (s *realSignal) Wait(ctx context.Context, seen uint64) error {
	s.mu.Lock()
	if s.seq != seen {
		s.mu.Unlock()
		return nil
	}
	ch := s.ch
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// realRand draws from math/rand/v2's global source: the runtime's ChaCha8, one state per
// thread, seeded from the system, so no lock (every query draws its id: a process-wide mutex
// and its deferred unlock were ~100 instructions of each, and a lock every goroutine took).
type realRand struct{}

func (realRand) Uint64() uint64       { return rand.Uint64() }
func (realRand) Float64() float64     { return rand.Float64() }
func (realRand) Int64N(n int64) int64 { return rand.Int64N(n) }
func (realRand) Read(p []byte)        { _, _ = crand.Read(p) }

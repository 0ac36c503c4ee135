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
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	e := &realEnv{log: logger, rnd: &realRand{r: rand.New(rand.NewChaCha8(seed))}}
	if path := os.Getenv(TestClockFileEnv); path != "" {
		logger.Warn("the clock follows a test fault file: never set this outside tests", "env", TestClockFileEnv, "file", path)
		e.clock = newTestClock(path)
	}
	return e
}

type realEnv struct {
	log   *slog.Logger
	rnd   *realRand
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

type realRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (r *realRand) Uint64() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Uint64()
}

func (r *realRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
}

func (r *realRand) Int64N(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Int64N(n)
}

func (r *realRand) Read(p []byte) { _, _ = crand.Read(p) }

package controlplane

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/node/env"
)

// manualEnv is an Env whose clock moves only when the test says so. Tasks are recorded, not
// run: tests drive the reaper through Tick and Flush.
type manualEnv struct {
	mu    sync.Mutex
	now   time.Time
	tasks []string
	rnd   uint64
	logs  *logbuf.Buffer
	log   *slog.Logger
}

func newManualEnv() *manualEnv {
	buf := &logbuf.Buffer{}
	return &manualEnv{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), logs: buf,
		log: slog.New(slog.NewTextHandler(buf, nil)), rnd: 0x9e3779b97f4a7c15}
}

func (m *manualEnv) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualEnv) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	return m.now
}

func (m *manualEnv) Sleep(ctx context.Context, d time.Duration) error { return ctx.Err() }
func (m *manualEnv) Go(ctx context.Context, name string, fn func(ctx context.Context)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tasks = append(m.tasks, name)
}
func (m *manualEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return ctx, func() {}
}
func (m *manualEnv) WithCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctx, func() {}
}
func (m *manualEnv) NewSignal() env.Signal { return &countSignal{} }
func (m *manualEnv) Rand() env.Rand        { return m }
func (m *manualEnv) Logger() *slog.Logger  { return m.log }
func (m *manualEnv) Float64() float64      { return float64(m.Uint64()>>11) / (1 << 53) }
func (m *manualEnv) Int64N(n int64) int64  { return int64(m.Uint64() % uint64(n)) }
func (m *manualEnv) Read(p []byte) {
	for i := range p {
		p[i] = byte(m.Uint64())
	}
}
func (m *manualEnv) Uint64() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rnd ^= m.rnd << 13
	m.rnd ^= m.rnd >> 7
	m.rnd ^= m.rnd << 17
	return m.rnd
}

type countSignal struct {
	mu  sync.Mutex
	seq uint64
}

func (s *countSignal) Notify() { s.mu.Lock(); s.seq++; s.mu.Unlock() }
func (s *countSignal) Seq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}
func (s *countSignal) Wait(ctx context.Context, seen uint64) error {
	if s.Seq() != seen {
		return nil
	}
	return ctx.Err()
}

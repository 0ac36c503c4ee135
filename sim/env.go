package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/queryflux/queryflux/node/env"
)

// nodeEnv is a node's env.Env. It stays the same across restarts; tasks it starts belong to the
// node's current incarnation.
type nodeEnv struct {
	n      *Node
	rnd    *nodeRand
	logger *slog.Logger
}

var _ env.Env = (*nodeEnv)(nil)

func newNodeEnv(n *Node) *nodeEnv {
	seed2 := xxhash.Sum64String(n.name)
	e := &nodeEnv{n: n, rnd: &nodeRand{r: rand.New(rand.NewPCG(n.s.opts.Seed, seed2))}}
	level := slog.LevelInfo
	if n.s.opts.Verbose {
		level = slog.LevelDebug
	}
	inner := slog.NewTextHandler(n.s.logs.sink(n.s), &slog.HandlerOptions{Level: level, ReplaceAttr: dropTime})
	e.logger = slog.New(&logHandler{n: n, inner: inner.WithAttrs([]slog.Attr{slog.String("node", n.name)})})
	return e
}

func (e *nodeEnv) log() *slog.Logger { return e.logger }

func (e *nodeEnv) Now() time.Time { return e.n.now() }

func (e *nodeEnv) Sleep(ctx context.Context, d time.Duration) error {
	s := e.n.s
	t := s.currentTask("Env.Sleep")
	sc := simCtxOf(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	gen := t.prepare()
	s.sleepUntil(t, gen, e.n.globalAt(d))
	if sc != nil {
		t.waitOn(&sc.waiters, gen)
	}
	s.park(t)
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

func (e *nodeEnv) Go(ctx context.Context, name string, fn func(ctx context.Context)) {
	s := e.n.s
	if cur := s.current; cur != nil && cur.killed {
		panic(errKilled)
	}
	simCtxOf(ctx) // contract check
	e.n.spawn(name, func() { fn(ctx) })
}

func (e *nodeEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	s := e.n.s
	c := s.newCtx(ctx)
	if c.err != nil {
		return c, c.cancelFunc()
	}
	c.deadline = e.n.now().Add(d)
	if pd, ok := ctx.Deadline(); ok && pd.Before(c.deadline) {
		c.deadline = pd
	}
	if d <= 0 {
		c.cancel(context.DeadlineExceeded)
		return c, c.cancelFunc()
	}
	s.timerSeq++
	c.deadlineTimer = timer{at: e.n.globalAt(d), seq: s.timerSeq, ctx: c}
	c.timer = &c.deadlineTimer
	s.timers.push(c.timer)
	return c, c.cancelFunc()
}

func (e *nodeEnv) WithCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	c := e.n.s.newCtx(ctx)
	return c, c.cancelFunc()
}

func (e *nodeEnv) NewSignal() env.Signal { return &signal{s: e.n.s} }

func (e *nodeEnv) Rand() env.Rand { return e.rnd }

func (e *nodeEnv) Logger() *slog.Logger { return e.logger }

// ---- Signal ----

type signal struct {
	s       *Sim
	seq     uint64
	waiters wlist
}

func (g *signal) Notify() {
	g.seq++
	g.s.wakeAll(&g.waiters)
}

func (g *signal) Seq() uint64 { return g.seq }

func (g *signal) Wait(ctx context.Context, seen uint64) error {
	for {
		if g.seq != seen {
			return nil
		}
		s := g.s
		t := s.currentTask("Signal.Wait")
		sc := simCtxOf(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		gen := t.prepare()
		t.waitOn(&g.waiters, gen)
		if sc != nil {
			t.waitOn(&sc.waiters, gen)
		}
		s.park(t)
		if g.seq != seen {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// ---- Rand ----

// nodeRand is a node's seeded source. Only one task runs at a time, so it needs no lock.
type nodeRand struct{ r *rand.Rand }

func (r *nodeRand) Uint64() uint64       { return r.r.Uint64() }
func (r *nodeRand) Float64() float64     { return r.r.Float64() }
func (r *nodeRand) Int64N(n int64) int64 { return r.r.Int64N(n) }
func (r *nodeRand) Read(p []byte) {
	var b [8]byte
	for len(p) > 0 {
		binary.LittleEndian.PutUint64(b[:], r.r.Uint64())
		p = p[copy(p, b[:]):]
	}
}

// ---- Logger ----

// logHandler stamps each record with the node's virtual time and the sim's step.
type logHandler struct {
	n     *Node
	inner slog.Handler
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	s := h.n.s
	r2 := slog.NewRecord(h.n.now(), r.Level, r.Message, r.PC)
	r2.AddAttrs(slog.Uint64("step", s.steps), slog.Duration("vt", s.now))
	r.Attrs(func(a slog.Attr) bool { r2.AddAttrs(a); return true })
	return h.inner.Handle(ctx, r2)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{n: h.n, inner: h.inner.WithAttrs(as)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{n: h.n, inner: h.inner.WithGroup(name)}
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{} // the virtual clock is in vt; the node's drifted clock is not needed
	}
	return a
}

// logRing keeps the most recent log lines.
type logRing struct {
	buf  []string
	next int
	full bool
}

func newLogRing(n int) *logRing { return &logRing{buf: make([]string, n)} }

func (l *logRing) add(line string) {
	l.buf[l.next] = line
	l.next++
	if l.next == len(l.buf) {
		l.next = 0
		l.full = true
	}
}

func (l *logRing) lines() []string {
	if !l.full {
		return append([]string(nil), l.buf[:l.next]...)
	}
	out := append([]string(nil), l.buf[l.next:]...)
	return append(out, l.buf[:l.next]...)
}

type ringSink struct {
	s *Sim
	l *logRing
}

func (l *logRing) sink(s *Sim) *ringSink { return &ringSink{s: s, l: l} }

func (w *ringSink) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	w.l.add(line)
	if w.s.opts.Verbose {
		fmt.Fprintln(w.s.opts.LogOut, line)
	}
	return len(p), nil
}

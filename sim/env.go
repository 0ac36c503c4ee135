package sim

import (
	"bytes"
	"context"
	"encoding"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
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
	inner := slog.NewTextHandler(&n.s.logs.sink, &slog.HandlerOptions{Level: level, ReplaceAttr: dropTime})
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
	if t := e.n.spawn(name, nil); t != nil {
		t.ctxFn, t.ctx = fn, ctx
	}
}

func (e *nodeEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := &simCtx{}
	e.arm(c, ctx, d)
	return c, c.cancelFunc()
}

// Rearm makes ctx, a context of this Env's WithTimeout that has ended and that nothing holds
// any more, WithTimeout(parent, d) again in place: the same object, whose CancelFunc still
// cancels it. It is the env.Loop's timer, armed again at nearly every wake-up of every worker
// of a fleet; a new context each time was about a fifth of the loop's cost. It does what
// WithTimeout does (the timer and the child's place in parent are the same), so the trace
// does not change. False (nothing done) if ctx is not such a context.
func (e *nodeEnv) Rearm(ctx, parent context.Context, d time.Duration) bool {
	c, ok := ctx.(*simCtx)
	if !ok || c.s != e.n.s || c.err == nil || c.live > 0 || c.waiters.head != nil {
		return false
	}
	e.arm(c, parent, d)
	return true
}

// arm makes c a child of parent that ends after d.
func (e *nodeEnv) arm(c *simCtx, parent context.Context, d time.Duration) {
	s := e.n.s
	s.initCtx(c, parent)
	if c.err != nil {
		return
	}
	c.deadline = e.n.now().Add(d)
	if pd, ok := parent.Deadline(); ok && pd.Before(c.deadline) {
		c.deadline = pd
	}
	if d <= 0 {
		c.cancel(context.DeadlineExceeded)
		return
	}
	s.timerSeq++
	c.deadlineTimer = timer{at: e.n.globalAt(d), seq: s.timerSeq, ctx: c}
	c.timer = &c.deadlineTimer
	s.timers.push(c.timer)
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

// logHandler stamps each record with the node's virtual time and the sim's step, and keeps it in
// the sim's log ring.
type logHandler struct {
	n     *Node
	inner slog.Handler // formats into the ring's sink
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	s := h.n.s
	// Built in the ring's slot, not in a local copied there: this frame is under every log call
	// of every task, and with a record's three copies (300 bytes each) it was 1.5 KB of the 8 KB
	// a task's coroutine starts with.
	rec := s.logs.slot(h.inner)
	*rec = slog.NewRecord(h.n.now(), r.Level, r.Message, r.PC)
	rec.AddAttrs(slog.Uint64("step", s.steps), slog.Duration("vt", s.now))
	r.Attrs(func(a slog.Attr) bool { rec.AddAttrs(frozen(a)); return true })
	if s.opts.Verbose {
		fmt.Fprintln(s.opts.LogOut, s.logs.format(h.inner, rec))
	}
	return nil
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

// frozen is a with what the text handler prints for an Any value taken now (a line is formatted
// when it is read, and the value may have changed by then). Other kinds are values already,
// but a LogValuer is resolved when the line is read: it must not change.
func frozen(a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindAny:
		x := a.Value.Any()
		if tm, ok := x.(encoding.TextMarshaler); ok {
			if b, err := tm.MarshalText(); err == nil {
				a.Value = slog.StringValue(string(b))
			}
			return a
		}
		if t := reflect.TypeOf(x); t != nil && t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			a.Value = slog.AnyValue(bytes.Clone(reflect.ValueOf(x).Bytes())) // printed quoted
			return a
		}
		a.Value = slog.StringValue(fmt.Sprintf("%+v", x))
	case slog.KindGroup:
		g := slices.Clone(a.Value.Group())
		for i := range g {
			g[i] = frozen(g[i])
		}
		a.Value = slog.GroupValue(g...)
	}
	return a
}

// logRing keeps the most recent log records, formatted only when read: a large run logs far
// more lines than it keeps, and formatting every one cost more than many roles' own work.
type logRing struct {
	buf  []logRecord
	next int
	full bool
	sink lineSink
}

type logRecord struct {
	h slog.Handler
	r slog.Record
}

func newLogRing(n int) *logRing { return &logRing{buf: make([]logRecord, n)} }

// slot takes the ring's next record (the oldest, once full) for one h formats, and returns it
// to be written in place.
func (l *logRing) slot(h slog.Handler) *slog.Record {
	rec := &l.buf[l.next]
	rec.h = h
	l.next++
	if l.next == len(l.buf) {
		l.next = 0
		l.full = true
	}
	return &rec.r
}

func (l *logRing) lines() []string {
	recs := l.buf[:l.next]
	if l.full {
		recs = append(slices.Clone(l.buf[l.next:]), l.buf[:l.next]...)
	}
	out := make([]string, 0, len(recs))
	for i := range recs {
		out = append(out, l.format(recs[i].h, &recs[i].r))
	}
	return out
}

// format is one record as a line, by h (a text handler writing to l.sink).
func (l *logRing) format(h slog.Handler, r *slog.Record) string {
	l.sink.line = ""
	if err := h.Handle(context.Background(), *r); err != nil {
		return fmt.Sprintf("%s (log line not formatted: %v)", r.Message, err)
	}
	return l.sink.line
}

// lineSink receives the one line a text handler writes per record.
type lineSink struct{ line string }

func (w *lineSink) Write(p []byte) (int, error) {
	w.line = strings.TrimRight(string(p), "\n")
	return len(p), nil
}

package query

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Statement is one statement's own context, for a frontend that owns the statement's end
// (trinohttp): its cancel is the only way it ends (its parent never ends), and it carries
// that cancel as Stop does. It costs less than context.WithCancel plus the engine's watch
// of it (pgx's ContextWatcher: a context.AfterFunc, which makes the cancelCtx's children map,
// and its removal, about 4k instructions a statement, #22): an engine arms one Watcher on it
// (Arm, Disarm) without allocating, and context.AfterFunc and the contexts derived from it
// directly use its AfterFunc instead of a goroutine or a children map.
type Statement struct {
	parent context.Context // never ends (NewStatement)
	stop   context.CancelFunc

	mu      sync.Mutex
	done    chan struct{} // made when first asked for, closed by the cancel
	err     error
	afters  []afterFunc
	afterID uint64
	watcher Watcher       // armed (Arm), nil when none
	handled chan struct{} // closed once the armed watcher's HandleCancel returned; nil until it fired
}

type afterFunc struct {
	id uint64
	f  func()
}

// A Watcher is told when the statement it is armed on ends (pgx's ctxwatch.Handler's half).
type Watcher interface {
	HandleCancel(context.Context)
}

type statementKey struct{}

// NewStatement returns a statement's context under parent, whose values it carries, and its
// cancel. A parent that can end (Done not nil) is watched: the statement ends with it.
func NewStatement(parent context.Context) (*Statement, context.CancelFunc) {
	s := &Statement{parent: parent}
	s.stop = s.cancel
	if parent.Done() != nil {
		unwatch := context.AfterFunc(parent, s.stop) //determinism:ok a real frontend's statement (trinohttp); the simulator never makes one
		s.stop = func() { unwatch(); s.cancel() }
	}
	return s, s.stop
}

func (s *Statement) Deadline() (time.Time, bool) { return s.parent.Deadline() }

func (s *Statement) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.err != nil {
			close(s.done)
		}
	}
	return s.done
}

func (s *Statement) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Statement) Value(key any) any {
	switch key.(type) {
	case stopKey:
		return s.stop
	case statementKey:
		return s
	}
	return s.parent.Value(key)
}

func (s *Statement) String() string { return "query.Statement" }

// cancel ends the statement: Done closes, Err is context.Canceled, the AfterFuncs run (the
// contexts derived from s end, context.AfterFunc's functions start) and the armed watcher is
// told on its own goroutine (as pgx's watch, a context.AfterFunc, tells it).
func (s *Statement) cancel() {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = context.Canceled
	if s.done != nil {
		close(s.done)
	}
	afters := s.afters
	s.afters = nil
	w := s.watcher
	if w != nil {
		s.handled = make(chan struct{})
	}
	handled := s.handled
	s.mu.Unlock()
	for _, a := range afters {
		a.f() // as a cancelCtx cancels its children: context's own AfterFunc starts its f's goroutine
	}
	if w != nil {
		go func() { //determinism:ok as pgx's watch tells its handler (a real frontend's statement; the simulator never makes one)
			defer close(handled)
			w.HandleCancel(s)
		}()
	}
}

// AfterFunc is the context package's hook for a Statement (context.AfterFunc and the contexts
// derived from s call it, with a function that ends what they made): f runs once s ends, in
// the cancel's goroutine, as a cancelCtx ends its children; stop unregisters it and reports
// whether it did so before f was started.
func (s *Statement) AfterFunc(f func()) (stop func() bool) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		go f() //determinism:ok context.AfterFunc's contract (a real frontend's statement; the simulator never makes one)
		return func() bool { return false }
	}
	s.afterID++
	id := s.afterID
	s.afters = append(s.afters, afterFunc{id: id, f: f})
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, a := range s.afters {
			if a.id == id {
				s.afters = append(s.afters[:i], s.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// StatementOf is the Statement whose end is ctx's end, or nil: ctx is s, or carries only
// values over it (no context derived between them can end sooner).
func StatementOf(ctx context.Context) *Statement {
	if s := valuesOver(ctx); s != nil {
		return s // without asking for Done: its channel is made only for who waits on it
	}
	s, _ := ctx.Value(statementKey{}).(*Statement)
	if s == nil || ctx.Done() != s.Done() {
		return nil
	}
	return s
}

// Arm has w told (HandleCancel, on its own goroutine) when s ends, until Disarm; it returns
// s's error instead when s ended already, and ErrArmed when a watcher is armed.
func (s *Statement) Arm(w Watcher) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.watcher != nil:
		return ErrArmed
	}
	s.watcher, s.handled = w, nil
	return nil
}

// ErrArmed is Arm's error while another watcher is armed.
var ErrArmed = errors.New("query: a watcher is armed on the statement already")

// Disarm ends Arm's watch, as pgx's ContextWatcher.Unwatch: false means the watcher was told
// of the end, and its HandleCancel has returned (the caller then undoes what it did).
func (s *Statement) Disarm() bool {
	s.mu.Lock()
	w, handled := s.watcher, s.handled
	s.watcher, s.handled = nil, nil
	s.mu.Unlock()
	if w == nil || handled == nil {
		return true
	}
	<-handled //determinism:ok as pgx's Unwatch waits for its handler (a real frontend's statement)
	return false
}

// WithValue is context.WithValue(ctx, key, val), kept reachable for a Statement's AfterFunc
// (withValue): for the layers an engine puts over a statement's context.
func WithValue(ctx context.Context, key, val any) context.Context { return withValue(ctx, key, val) }

// withValue is context.WithValue(ctx, key, val), except over a Statement (or such values over
// one), where it is a layer that hands the Statement's AfterFunc on: context.AfterFunc and
// WithCancel look for that method on the context they are given only, so over a plain
// WithValue layer (the core's engine tag, an engine's own) they would start a goroutine per
// call to watch the Statement (duckengine's and mysqlengine's interrupts of each statement).
func withValue(ctx context.Context, key, val any) context.Context {
	if s := valuesOver(ctx); s != nil {
		return &statementValue{Context: ctx, s: s, key: key, val: val}
	}
	return context.WithValue(ctx, key, val)
}

// valuesOver is the Statement ctx is, or whose withValue layers it is; nil for any other.
func valuesOver(ctx context.Context) *Statement {
	switch c := ctx.(type) {
	case *Statement:
		return c
	case *statementValue:
		return c.s
	}
	return nil
}

// statementValue is one value over a Statement (withValue); it ends when the Statement ends.
type statementValue struct {
	context.Context
	s        *Statement
	key, val any
}

func (c *statementValue) Value(key any) any {
	if key == c.key {
		return c.val
	}
	return c.Context.Value(key)
}

func (c *statementValue) AfterFunc(f func()) func() bool { return c.s.AfterFunc(f) }

func (c *statementValue) String() string { return "query.Statement.WithValue" }

// Package invariants asserts what must always hold where it lives (pebble's habit): a core
// never runs more queries on a cluster than its cap, a slot is released once, a result stream
// is closed once and never forgotten.
//
// On or off: assertions run in every test binary (testing.Testing), in a binary built with the
// build tag "invariants", and from the moment Enable is called (qfsim does, so every simulator
// run checks them). A production binary leaves them off; a check then costs one atomic load,
// and what it guards degrades safely (a second close does nothing). A switch rather than only a
// build tag, so `go test` and the simulator check without anyone remembering a flag.
//
// A violation panics with a *Violation, which tests recover (Catch) to prove a check fires.
//
// It touches nothing outside its own state: no time, no tasks, no I/O.
package invariants

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
)

var enabled atomic.Bool

func init() { enabled.Store(tagged || testing.Testing()) }

// Enabled reports whether assertions run. Guard a check whose arguments cost something with it:
//
//	if invariants.Enabled() && running > limit { invariants.Fail("...", running, limit) }
func Enabled() bool { return enabled.Load() }

// Enable turns assertions on for the rest of the process (the simulator calls it at start).
func Enable() { enabled.Store(true) }

// Violation is the panic value of a failed assertion.
type Violation struct{ Message string }

func (v *Violation) Error() string { return "invariant violated: " + v.Message }

// Fail panics with a Violation. Callers reach it only when Enabled and the invariant is broken.
func Fail(format string, args ...any) {
	panic(&Violation{Message: fmt.Sprintf(format, args...)})
}

// Check fails when assertions are on and cond is false. Its arguments are evaluated (and boxed)
// even when off: on hot paths, test Enabled first.
func Check(cond bool, format string, args ...any) {
	if !cond && Enabled() {
		Fail(format, args...)
	}
}

// Catch runs fn and returns the Violation it panicked with, or nil if it returned. Any other
// panic goes on. Tests plant a bug in fn and assert that Catch caught it.
func Catch(fn func()) (v *Violation) {
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if v, ok = r.(*Violation); !ok {
				panic(r)
			}
		}
	}()
	fn()
	return nil
}

// Once is the closed state of something that must be closed exactly once: an admission
// finished, a result stream closed, a slot released. Its zero value is open.
type Once struct {
	closed atomic.Bool
	ledger *Ledger // set by Ledger.Open while assertions are on
}

// Close marks o closed and reports whether it was open; the caller does its release work only
// then. A second Close is a violation naming kind and name when assertions are on; with them off
// it returns false, so the second close is harmless.
func (o *Once) Close(kind, name string) bool {
	if o.closed.Swap(true) {
		if Enabled() {
			Fail("%s %s closed twice", kind, name)
		}
		return false
	}
	if o.ledger != nil {
		o.ledger.closed(o)
	}
	return true
}

// Closed reports whether o has been closed.
func (o *Once) Closed() bool { return o.closed.Load() }

// Ledger lists what its owner opened and has not closed yet, while assertions are on: tests and
// simulator runs ask it for leaks when everything should be over. With assertions off it
// records nothing. Its zero value is empty and ready.
type Ledger struct {
	mu   sync.Mutex
	open map[*Once]string
}

// Open records o as open, described by kind, name and detail (say "rows", a query id and its
// SQL), until o.Close. Call it before o can be closed.
func (l *Ledger) Open(o *Once, kind, name, detail string) {
	if !Enabled() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		l.open = map[*Once]string{}
	}
	o.ledger = l
	l.open[o] = kind + " " + name + ": " + detail
}

func (l *Ledger) closed(o *Once) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, o)
}

// Unclosed describes what is open, sorted.
func (l *Ledger) Unclosed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.open))
	for _, what := range l.open {
		out = append(out, what)
	}
	sort.Strings(out)
	return out
}

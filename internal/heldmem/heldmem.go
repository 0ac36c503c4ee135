// Package heldmem bounds the memory clients leave in the daemon between their messages: the
// prepared statements, portals, parameter data sent ahead and handles a client keeps. Each
// connection (or user, where a protocol has no connection) draws from a Budget of its own, and
// every Budget of a daemon from one Pool, so that neither one client nor many together can hold
// more than their bounds: many connections times a connection's budget must not exhaust the
// host.
//
// It touches nothing but its own counters (atomics: a Budget's owner and its closer may run on
// different goroutines).
//
// determinism: pure (no time, tasks, randomness, network or storage)
package heldmem

import (
	"fmt"
	"sync/atomic"
)

// Defaults: a connection may hold as much as its largest message (netlimit's
// MessageBytesMaxDefault), and the daemon 2 GiB in all (32 connections at their bound: the
// rest of a 24 GiB host stays for results, engines and the runtime).
const (
	ConnectionBytesDefault = 64 << 20
	DaemonBytesDefault     = 2 << 30
)

// Pool is the daemon's bound. The zero Pool bounds nothing; use NewPool.
type Pool struct {
	max  int64
	used atomic.Int64
}

// NewPool bounds everything its budgets hold together to max bytes (max <= 0: the default).
func NewPool(max int64) *Pool {
	if max <= 0 {
		max = DaemonBytesDefault
	}
	return &Pool{max: max}
}

// Used is what the pool's budgets hold now.
func (p *Pool) Used() int64 { return p.used.Load() }

// Max is the pool's bound.
func (p *Pool) Max() int64 { return p.max }

// Budget is one connection's (or user's) share: at most max bytes, drawn from its pool.
type Budget struct {
	pool   *Pool
	max    int64
	used   atomic.Int64
	closed atomic.Bool // Close gave everything back: later Takes and Gives count nothing
}

// Budget opens a budget of max bytes (max <= 0: ConnectionBytesDefault) drawing from p (nil:
// bounded by max alone).
func (p *Pool) Budget(max int64) *Budget {
	if max <= 0 {
		max = ConnectionBytesDefault
	}
	return &Budget{pool: p, max: max}
}

// Error is a Take refused: the connection's bound (Daemon false) or the daemon's.
type Error struct {
	Daemon     bool
	Want, Held int64 // what was asked, what was held before it
	Max        int64 // the bound it would cross
}

func (e *Error) Error() string {
	if e.Daemon {
		return fmt.Sprintf("the server holds %d bytes for its clients and %d more would pass its limit of %d; try again later", e.Held, e.Want, e.Max)
	}
	return fmt.Sprintf("this connection holds %d bytes of prepared statements and other state, and %d more would pass its limit of %d; close some first", e.Held, e.Want, e.Max)
}

// Refusal is the error a Take of n bytes would return now (nil if it would not be refused).
func (b *Budget) Refusal(n int) *Error {
	want := int64(n)
	if held := b.used.Load(); held+want > b.max {
		return &Error{Want: want, Held: held, Max: b.max}
	}
	if p := b.pool; p != nil {
		if held := p.used.Load(); held+want > p.max {
			return &Error{Daemon: true, Want: want, Held: held, Max: p.max}
		}
	}
	return nil
}

// Take counts n more bytes held, or refuses them (*Error) and counts nothing.
func (b *Budget) Take(n int) *Error {
	want := int64(n)
	if want <= 0 || b.closed.Load() {
		return nil
	}
	if held := b.used.Add(want); held > b.max {
		b.used.Add(-want)
		return &Error{Want: want, Held: held - want, Max: b.max}
	}
	if p := b.pool; p != nil {
		if held := p.used.Add(want); held > p.max {
			p.used.Add(-want)
			b.used.Add(-want)
			return &Error{Daemon: true, Want: want, Held: held - want, Max: p.max}
		}
	}
	return nil
}

// Give counts n bytes no longer held (what a Take counted).
func (b *Budget) Give(n int) {
	if n <= 0 || b.closed.Load() {
		return
	}
	b.used.Add(-int64(n))
	if b.pool != nil {
		b.pool.used.Add(-int64(n))
	}
}

// Room is how many bytes more a Take would accept now (0 when none).
func (b *Budget) Room() int64 {
	room := b.max - b.used.Load()
	if p := b.pool; p != nil {
		room = min(room, p.max-p.used.Load())
	}
	return max(room, 0)
}

// Used is what the budget holds now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Close gives back all the budget holds (its connection ended); it may be called again.
func (b *Budget) Close() {
	b.closed.Store(true)
	if n := b.used.Swap(0); n != 0 && b.pool != nil {
		b.pool.used.Add(-n)
	}
}

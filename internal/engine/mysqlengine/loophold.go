package mysqlengine

import (
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// Held loop connections: the frontend's loop may keep a client's loop connection plugged in
// between its statements (Keep) rather than give it back after each and take one before the
// next: a take, a plug, an unplug and a give-back per statement are ~900 instructions. A held
// connection still fills one of MaxConns's slots, so the pool stays fair only if it goes back
// when someone else needs it:
//
//   - a taker that must wait for a slot (slots.take) asks every holder to give back what it
//     holds idle (Holder.Reclaim); a holder busy with a statement then gives it back at the
//     statement's end, as Keep answers false while anyone waits;
//   - a connection held idle for loopHoldIdle to 2x loopHoldIdle is reclaimed by a sweep
//     that runs while anything is held;
//   - Close reclaims everything held, and Keep answers false after it.
//
// No waiter is missed: a holder registers before it reads the count of waiters (Keep), and a
// waiter counts itself before it takes its snapshot of the holders (sequentially consistent
// atomics and e.mu): either the holder sees the waiter and gives back, or the waiter's
// snapshot has the holder, whose reclaim, run on the holder's loop after whatever it was
// doing, finds it idle or busy (and then its next Keep sees the waiter).

// Holder keeps a loop connection between its statements (the frontend's loop run).
type Holder interface {
	// Reclaim asks for lc back: given back at once if it is held idle, else at its
	// statement's end (Keep says so). It must not wait: the caller may hold a waiter.
	Reclaim(lc *LoopConn)
}

// loopHoldIdleDefault is how long a connection may stay held idle before the sweep reclaims
// it (between once and twice that): a client that pauses lets its connection serve others,
// one that sends its statements back to back keeps it.
const loopHoldIdleDefault = 100 * time.Millisecond

// holds is an engine's held connections.
type holds struct {
	by       map[*LoopConn]Holder // under Engine.mu
	sweeping bool                 // under Engine.mu: the sweep runs
	shut     atomic.Bool          // Close ran: nothing is kept
	idle     time.Duration        // Config.LoopHoldIdle (0: loopHoldIdleDefault)
}

// Keep is asked after each statement a Holder ran on lc, which it relayed whole: true when
// the holder may keep lc plugged in for its next statement, false when it is to Release it
// (someone waits for a connection slot, the engine closed, or the statement was killed: its
// kill may reach the server late, so Release takes care of it). From Keep on, until it next
// calls Begin or Release, the holder must answer Reclaim.
func (lc *LoopConn) Keep(h Holder) bool {
	if !lc.state.CompareAndSwap(loopRunning, loopIdle) {
		return false
	}
	e := lc.e
	if lc.holder == nil {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return false
		}
		if e.holds.by == nil {
			e.holds.by = map[*LoopConn]Holder{}
		}
		e.holds.by[lc], lc.holder = h, h
		if !e.holds.sweeping {
			e.holds.sweeping = true
			go e.sweepHolds()
		}
		e.mu.Unlock()
	}
	if !lc.used.Load() { // (a store is a locked instruction; the sweep clears it rarely)
		lc.used.Store(true)
	}
	return !e.holds.shut.Load() && e.slots.waiting.Load() == 0
}

// Serves reports whether lc, kept by its holder, can run q on the engine e (an admission's)
// as TakeLoopConn would have taken it: lc's engine, the same client flags, and q's database.
func (lc *LoopConn) Serves(e any, q *query.Request) bool {
	if any(lc.e) != e || lc.flags != lc.e.requestFlags(q) {
		return false
	}
	db := requestDatabase(q)
	return db == "" || db == lc.c.GetDB()
}

// Held is how many loop connections are held by their clients now (tests).
func (e *Engine) Held() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.holds.by)
}

// unhold forgets lc's holder, under e.mu (giveBack).
func (e *Engine) unhold(lc *LoopConn) {
	if lc.holder != nil {
		delete(e.holds.by, lc)
		lc.holder = nil
	}
}

// reclaimHeld asks every holder for its connection: a taker waits for a slot (slots.wanted),
// or the engine closes.
func (e *Engine) reclaimHeld() {
	e.mu.Lock()
	if len(e.holds.by) == 0 {
		e.mu.Unlock()
		return
	}
	held := make([]heldConn, 0, len(e.holds.by))
	for lc, h := range e.holds.by {
		held = append(held, heldConn{lc, h})
	}
	e.mu.Unlock()
	for _, hc := range held {
		hc.h.Reclaim(hc.lc)
	}
}

type heldConn struct {
	lc *LoopConn
	h  Holder
}

// sweepHolds reclaims the connections held idle for a whole period, while any are held.
func (e *Engine) sweepHolds() {
	var idle []heldConn
	for {
		time.Sleep(e.holdIdle())
		e.mu.Lock()
		if len(e.holds.by) == 0 {
			e.holds.sweeping = false
			e.mu.Unlock()
			return
		}
		idle = idle[:0]
		for lc, h := range e.holds.by {
			if !lc.used.Swap(false) {
				idle = append(idle, heldConn{lc, h})
			}
		}
		e.mu.Unlock()
		for _, hc := range idle {
			hc.h.Reclaim(hc.lc)
		}
	}
}

func (e *Engine) holdIdle() time.Duration {
	if e.holds.idle > 0 {
		return e.holds.idle
	}
	return loopHoldIdleDefault
}

package pgengine

import (
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
)

// Kept connections (engine.PGWireKeeper): in transaction pool mode a frontend's event loop may
// keep a client's engine connection plugged in between its transactions (Keep) rather than
// give it back at each transaction's end and take it again at the next: an unplug, a give-back,
// a take (a scan of the idle list) and a plug are ~1,200 instructions a transaction. The
// admission (route, check, slot, lease tag) still runs per transaction; only the connection
// stays. A kept connection still counts in the engine's budget, so the pool stays fair only if
// it goes back when someone else needs it:
//
//   - a taker that must wait for a connection (rawPool.get's mustWait) asks every holder to give
//     back what it keeps between transactions (PGWireHolder.Reclaim); a holder running a
//     transaction on it gives it back at the transaction's end, as Keep answers false while
//     anyone waits; a connect that waits for a token of the budget (the pgx pool's) counts
//     and asks the same way;
//   - a connection kept idle for rawHoldIdleDefault to twice that is reclaimed by a sweep that
//     runs while anything is kept;
//   - the engine's Close reclaims everything kept, and Keep answers false after it.
//
// No waiter is missed: a holder registers (under p.mu) before it reads the count of waiters
// (Keep), and a waiter counts itself before it takes its snapshot of the holders (under p.mu):
// either the holder sees the waiter and gives back, or the waiter's snapshot has the holder,
// whose reclaim, run on the holder's loop after whatever it was doing, finds the connection
// kept idle or in a transaction (and then its next Keep sees the waiter).
//
// A kept connection serves only the owner it served (Kept is taken over only for that owner,
// with the same setup and lease tag, exactly what getReady would have handed it), so nothing
// of one client's session reaches another: a connection goes from client to client only
// through the pool and its reset, as before.

// rawHoldIdleDefault is how long a connection may stay kept idle before the sweep reclaims it
// (between once and twice that): a client that pauses lets its connection serve others, one
// that sends its transactions back to back keeps it.
const rawHoldIdleDefault = 100 * time.Millisecond

// holds are a pool's kept connections.
type holds struct {
	by       map[*rawConn]heldConn // under rawPool.mu
	sweeping bool                  // under rawPool.mu: the sweep runs
	shut     atomic.Bool           // the pool closed: nothing is kept
	waiting  atomic.Int32          // takers waiting for a connection (get)
	idle     atomic.Int64          // a time.Duration; 0: rawHoldIdleDefault
}

var _ engine.PGWireKeeper = (*wireConn)(nil)

// Keep implements engine.PGWireKeeper: asked at a transaction's end (ReadyForQuery 'I' relayed,
// nothing more sent), true when h may keep the connection plugged in for the owner's next
// transaction; the wire's Close then leaves it out of the pool, and the connection is h's until
// a next wire takes it over (PGWireOptions.Kept) or h gives it back (GiveBack). False when it
// is not fit to serve another statement at once, was cancelled (the request may still be on
// its way), someone waits for a connection, or the engine closed: h closes the wire as usual.
// From the first Keep on, until it gives the connection back, h must answer Reclaim.
func (w *wireConn) Keep(h engine.PGWireHolder) bool {
	c, p := w.c, w.pool
	if c.broken || c.awaitZ != 0 || c.unsynced || c.txStatus != 'I' || c.sock == nil {
		return false
	}
	if c.holder == nil {
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			return false
		}
		if p.holds.by == nil {
			p.holds.by = map[*rawConn]heldConn{}
		}
		p.holds.by[c], c.holder = heldConn{w, h}, h
		if !p.holds.sweeping {
			p.holds.sweeping = true
			go p.sweepHolds()
		}
		p.mu.Unlock()
	}
	if !c.holdUsed.Load() { // (a store is a locked instruction; the sweep clears it rarely)
		c.holdUsed.Store(true)
	}
	if p.holds.shut.Load() || p.holds.waiting.Load() != 0 {
		return false
	}
	w.mu.Lock()
	keep := !w.cancelled && !w.closed
	w.keep = keep
	w.mu.Unlock()
	return keep
}

// GiveBack implements engine.PGWireKeeper: the connection Keep kept goes back to the pool (its
// holder has let go of its socket), or is closed when it is not healthy (its server spoke out
// of turn, or ended it).
func (w *wireConn) GiveBack(healthy bool) {
	w.mu.Lock()
	cancelled := w.cancelled
	w.keep = false
	w.mu.Unlock()
	if !healthy || cancelled {
		w.c.broken = true
	}
	w.pool.put(w.c)
}

// takeKept is the wire k, kept by its holder (Keep) and handed back as PGWireOptions.Kept,
// made the new wire of owner's next transaction when its connection serves it at once as
// getReady's would: the owner's, with its setup and the lease's tag. nil when it does not;
// the holder then gives it back.
func (p *rawPool) takeKept(k *wireConn, owner uint64, tag, setup string) *wireConn {
	c := k.c
	if !k.keep || c.holder == nil || c.owner != owner || !c.tagged || c.tag != tag || c.setup != setup || c.broken {
		return nil
	}
	k.mu.Lock()
	ok := k.closed && !k.cancelled
	k.mu.Unlock()
	if !ok {
		return nil
	}
	// Nothing else reaches k: a kept wire was never cancelled (Keep), so no cancel's sender
	// follows it, and Cancel after Close did nothing.
	*k = wireConn{pool: p, c: c}
	return k
}

// keptAside is spare, unless it is the kept wire k still kept (takeKept did not take it):
// that memory is the holder's connection until it gives it back.
func keptAside(spare, kept engine.PGWire) engine.PGWire {
	if k, ok := kept.(*wireConn); ok && k.keep && spare == kept {
		return nil
	}
	return spare
}

// unhold forgets c's holder (put), under p.mu.
func (p *rawPool) unhold(c *rawConn) {
	if c.holder != nil {
		delete(p.holds.by, c)
		c.holder = nil
	}
}

// reclaimHeld asks every holder for its connection: a taker waits (get), a pgx connection
// waits for a token (the budget's reclaim), or the pool closes.
func (p *rawPool) reclaimHeld() {
	p.mu.Lock()
	if len(p.holds.by) == 0 {
		p.mu.Unlock()
		return
	}
	held := make([]heldConn, 0, len(p.holds.by))
	for _, hc := range p.holds.by { //determinism:ok every holder is asked
		held = append(held, hc)
	}
	p.mu.Unlock()
	for _, hc := range held {
		hc.h.Reclaim(hc.w)
	}
}

// hasHeld says a connection is kept by a holder (one a taker could have after a reclaim).
func (p *rawPool) hasHeld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.holds.by) > 0
}

// heldConn is a kept connection's wire (the one memory every transaction's wire on it is
// made in: takeKept) and its holder.
type heldConn struct {
	w *wireConn
	h engine.PGWireHolder
}

// sweepHolds reclaims the connections kept idle for a whole period, while any are kept.
func (p *rawPool) sweepHolds() {
	var idle []heldConn
	for {
		time.Sleep(p.holdIdle())
		p.mu.Lock()
		if len(p.holds.by) == 0 || p.shut {
			p.holds.sweeping = false
			p.mu.Unlock()
			return
		}
		idle = idle[:0]
		for c, hc := range p.holds.by { //determinism:ok each connection is looked at alone
			if !c.holdUsed.Swap(false) {
				idle = append(idle, hc)
			}
		}
		p.mu.Unlock()
		for _, hc := range idle {
			hc.h.Reclaim(hc.w)
		}
	}
}

func (p *rawPool) holdIdle() time.Duration {
	if d := time.Duration(p.holds.idle.Load()); d > 0 {
		return d
	}
	return rawHoldIdleDefault
}

// SetKeptIdle sets how long a connection may stay kept idle before it is reclaimed (between
// once and twice d; 0: the default), for tests whose transactions may come slower than the
// default on a loaded machine.
func (e *Engine) SetKeptIdle(d time.Duration) { e.raw.holds.idle.Store(int64(d)) }

// Kept is how many relay connections frontends keep between their owners' transactions now
// (tests).
func (e *Engine) Kept() int {
	e.raw.mu.Lock()
	defer e.raw.mu.Unlock()
	return len(e.raw.holds.by)
}

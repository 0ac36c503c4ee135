package duckengine

import "time"

// lockRules are the write lock's rules (pgwritelock.go) as plain data, so that a test can
// drive them step by step with a clock of its own: who holds the lock, who waits for it in
// what order and until when, and when the holder last moved. Times are durations since an
// origin the caller picks. The caller serializes the calls (writeLock's mutex).
//
// The rules:
//   - one holder at a time; the lock goes to a requester at once only when it is free and no
//     one waits, else to its waiters first come, first served, each at a release;
//   - a waiter is served, or leaves at its deadline (lock_timeout, statement_timeout,
//     innodb_lock_wait_timeout), or leaves when the caller stops waiting (a cancel);
//   - a waiter that gives up on an idle holder (idle) leaves once the holder neither began
//     nor ended a statement for idleAfter since the later of the waiter's arrival and its
//     last move, and has nothing under way: a statement running or a result still being
//     read keeps the holder at work however long it takes.
type lockRules struct {
	holder  uint64        // 0: free
	running int           // the holder's statements and results under way
	moved   time.Duration // when the holder last took the lock, began or ended a statement
	queue   []lockWaiter
}

// lockWaiter is one waiter for the lock.
type lockWaiter struct {
	id       uint64
	since    time.Duration // when it came
	deadline time.Duration // when it stops waiting; 0: never
	idle     bool          // it gives up on a holder idle for idleAfter
}

// lockAnswer is what the rules answer a requester or waiter.
type lockAnswer uint8

const (
	lockWaiting  lockAnswer = iota
	lockGranted             // it holds the lock
	lockBusy                // it would not wait, and the lock is another's
	lockTimedOut            // its deadline came
	lockIdle                // the holder sat idle: it runs without the lock
)

// idleAfter is how long the lock's holder may sit idle before its waiters run without it.
const idleAfter = 2 * time.Second

// request asks for the lock for w (w.since is now); nowait: do not wait for it.
func (r *lockRules) request(w lockWaiter, nowait bool) lockAnswer {
	if r.holder == 0 && len(r.queue) == 0 {
		r.grant(w.id, w.since)
		return lockGranted
	}
	if nowait {
		return lockBusy
	}
	r.queue = append(r.queue, w)
	return lockWaiting
}

func (r *lockRules) grant(id uint64, now time.Duration) {
	r.holder, r.running, r.moved = id, 0, now
}

// release lets go of the lock; next is the waiter it went to (0: none, the lock is free).
func (r *lockRules) release(now time.Duration) (next uint64) {
	r.holder, r.running = 0, 0
	if len(r.queue) == 0 {
		return 0
	}
	next = r.queue[0].id
	r.queue = r.queue[1:]
	r.grant(next, now)
	return next
}

// begin marks a statement (or a result being read) of the holder begun; the token it answers
// is end's, which ignores a token of an earlier holder.
func (r *lockRules) begin(now time.Duration) (token uint64) {
	if r.holder != 0 {
		r.running++
		r.moved = now
	}
	return r.holder
}

// end marks the holder's statement begun with token ended.
func (r *lockRules) end(token uint64, now time.Duration) {
	if token != 0 && token == r.holder && r.running > 0 {
		r.running--
		r.moved = now
	}
}

// check is what waiter id is told at now: still waiting, or served, or it leaves (timed out,
// or given up on an idle holder: then it is no longer in the queue).
func (r *lockRules) check(id uint64, now time.Duration) lockAnswer {
	if r.holder == id {
		return lockGranted
	}
	i := r.index(id)
	if i < 0 {
		return lockTimedOut // not waiting: left already
	}
	w := r.queue[i]
	switch {
	case w.deadline > 0 && now >= w.deadline:
		r.remove(i)
		return lockTimedOut
	case w.idle && r.running == 0 && now-max(w.since, r.moved) >= idleAfter:
		r.remove(i)
		return lockIdle
	}
	return lockWaiting
}

// wakeAt is when check may next answer waiter id otherwise than waiting, but for a release
// (which serves it without its asking), never before now; -1: only a release.
func (r *lockRules) wakeAt(id uint64, now time.Duration) time.Duration {
	i := r.index(id)
	if i < 0 {
		return now
	}
	w := r.queue[i]
	at := time.Duration(-1)
	if w.idle {
		at = max(w.since, r.moved) + idleAfter
		if r.running > 0 { // no give-up before idleAfter past an end yet to come
			at = now + idleAfter
		}
	}
	if w.deadline > 0 && (at < 0 || w.deadline < at) {
		at = w.deadline
	}
	if at >= 0 && at < now { // its moment passed: wake it now
		at = now
	}
	return at
}

// leave takes waiter id out of the queue (its caller stopped waiting); a waiter the lock went
// to meanwhile lets go of it: next is whom it went to then.
func (r *lockRules) leave(id uint64, now time.Duration) (next uint64) {
	if r.holder == id {
		return r.release(now)
	}
	if i := r.index(id); i >= 0 {
		r.remove(i)
	}
	return 0
}

func (r *lockRules) index(id uint64) int {
	for i, w := range r.queue {
		if w.id == id {
			return i
		}
	}
	return -1
}

func (r *lockRules) remove(i int) {
	r.queue = append(r.queue[:i:i], r.queue[i+1:]...)
}

// waitCycle is a cycle of waits through self, as PostgreSQL's deadlock check finds one:
// self waits for cycle[1], which waits for cycle[2], ..., and the last waits for self; nil
// when none. waitsFor(p) is whom p waits for (none: p is not waiting); a party that waits for
// itself is no cycle (a lock is never blocked by its own holder). Depth first, in waitsFor's
// order, each party visited once: a wait-for graph of n parties is read in O(n + edges).
func waitCycle(self uint32, waitsFor func(uint32) []uint32) []uint32 {
	seen := map[uint32]bool{self: true}
	path := []uint32{self}
	var walk func(p uint32) bool
	walk = func(p uint32) bool {
		for _, q := range waitsFor(p) {
			switch {
			case q == p:
			case q == self:
				return true
			case !seen[q]:
				seen[q] = true
				path = append(path, q)
				if walk(q) {
					return true
				}
				path = path[:len(path)-1]
			}
		}
		return false
	}
	if walk(self) {
		return path
	}
	return nil
}

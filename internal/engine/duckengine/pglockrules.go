package duckengine

import "slices"

// lockRules are the write lock's rules (pgwritelock.go) as plain data: who holds what, who
// waits for what and in which order, with no time, goroutine or channel in it, so that a test
// can drive every interleaving. An owner (a session, or one statement outside a transaction)
// holds the database's writes ("all": a write, DDL, a FOR UPDATE whose rows cannot be told)
// or some rows (a FOR UPDATE's, then a write of only those rows), or waits for one of them.
//
// The rules:
//   - all conflicts with anything another owner holds; rows conflict with another's all and
//     with another's hold of one of the same rows;
//   - an ask that conflicts with no other owner's hold is granted at once, unless the asker
//     holds nothing and an earlier waiter wants something that conflicts (first come, first
//     served, as PostgreSQL's lock queue); else the asker waits;
//   - a release or a waiter leaving grants the waiters that now may go, in arrival order;
//   - an owner deadlocks when the owners it waits for wait, through one another, for it
//     (PostgreSQL's wait-for graph): it is the one to give up, as PostgreSQL's waiter whose
//     deadlock_timeout ran out first is.
type lockRules struct {
	holds map[lockOwner]*lockHold
	queue []lockWaiter // in arrival order
}

// lockOwner names who holds or waits: a session, or a statement of its own.
type lockOwner uint64

// lockRow is a row of a table: the table's name as the client's statement resolved it and
// DuckDB's rowid.
type lockRow struct {
	table string
	id    int64
}

// lockWant is what an owner asks for: all, or rows.
type lockWant struct {
	all  bool
	rows []lockRow
}

type lockHold struct {
	all  bool
	rows map[lockRow]struct{}
}

type lockWaiter struct {
	owner lockOwner
	want  lockWant
}

// ask grants w to o or queues o; granted reports which. o must not be waiting already.
func (r *lockRules) ask(o lockOwner, w lockWant) (granted bool) {
	if r.grantable(o, w, len(r.queue)) {
		r.grant(o, w)
		return true
	}
	r.queue = append(r.queue, lockWaiter{o, w})
	return false
}

// release lets go of all o holds and of its place in the queue; granted are the waiters
// that now hold what they waited for.
func (r *lockRules) release(o lockOwner) (granted []lockOwner) {
	delete(r.holds, o)
	return r.leave(o)
}

// leave takes o out of the queue (its wait ended without the lock), keeping what it holds;
// granted as release's.
func (r *lockRules) leave(o lockOwner) (granted []lockOwner) {
	r.queue = slices.DeleteFunc(r.queue, func(w lockWaiter) bool { return w.owner == o })
	for i := 0; i < len(r.queue); {
		w := r.queue[i]
		if !r.grantable(w.owner, w.want, i) {
			i++
			continue
		}
		r.grant(w.owner, w.want)
		granted = append(granted, w.owner)
		r.queue = slices.Delete(r.queue, i, i+1)
	}
	return granted
}

// waiting reports whether o is in the queue.
func (r *lockRules) waiting(o lockOwner) bool {
	return slices.ContainsFunc(r.queue, func(w lockWaiter) bool { return w.owner == o })
}

// holding reports whether o holds anything, and whether all.
func (r *lockRules) holding(o lockOwner) (any, all bool) {
	h := r.holds[o]
	return h != nil, h != nil && h.all
}

// covers reports whether o's hold already covers w (asking would change nothing).
func (r *lockRules) covers(o lockOwner, w lockWant) bool {
	h := r.holds[o]
	if h == nil || h.all {
		return h != nil
	}
	if w.all {
		return false
	}
	for _, row := range w.rows {
		if _, ok := h.rows[row]; !ok {
			return false
		}
	}
	return true
}

// deadlocked reports whether o waits, through the owners it waits for, for itself.
func (r *lockRules) deadlocked(o lockOwner) bool {
	seen := map[lockOwner]bool{}
	var reaches func(from lockOwner) bool
	reaches = func(from lockOwner) bool {
		for _, b := range r.blockers(from) {
			if b == o {
				return true
			}
			if !seen[b] {
				seen[b] = true
				if reaches(b) {
					return true
				}
			}
		}
		return false
	}
	return reaches(o)
}

// blockers are the owners waiter o waits for: those whose holds conflict with its want, and
// (when o holds nothing) the earlier waiters whose wants do; none when o does not wait.
func (r *lockRules) blockers(o lockOwner) []lockOwner {
	at := slices.IndexFunc(r.queue, func(w lockWaiter) bool { return w.owner == o })
	if at < 0 {
		return nil
	}
	w := r.queue[at].want
	var out []lockOwner
	for p, h := range r.holds {
		if p != o && holdConflicts(h, w) {
			out = append(out, p)
		}
	}
	if r.holds[o] == nil {
		for _, e := range r.queue[:at] {
			if wantsConflict(e.want, w) {
				out = append(out, e.owner)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// grantable: w conflicts with no other owner's hold and (when o holds nothing) with none of
// the first n waiters' wants.
func (r *lockRules) grantable(o lockOwner, w lockWant, n int) bool {
	for p, h := range r.holds {
		if p != o && holdConflicts(h, w) {
			return false
		}
	}
	if r.holds[o] != nil {
		return true
	}
	for _, e := range r.queue[:n] {
		if e.owner != o && wantsConflict(e.want, w) {
			return false
		}
	}
	return true
}

func (r *lockRules) grant(o lockOwner, w lockWant) {
	if r.holds == nil {
		r.holds = map[lockOwner]*lockHold{}
	}
	h := r.holds[o]
	if h == nil {
		h = &lockHold{rows: map[lockRow]struct{}{}}
		r.holds[o] = h
	}
	h.all = h.all || w.all
	for _, row := range w.rows {
		h.rows[row] = struct{}{}
	}
}

// holdConflicts: another owner's hold h keeps w waiting.
func holdConflicts(h *lockHold, w lockWant) bool {
	if h.all || w.all && len(h.rows) > 0 {
		return true
	}
	for _, row := range w.rows {
		if _, ok := h.rows[row]; ok {
			return true
		}
	}
	return false
}

// wantsConflict: two wants could not be held together.
func wantsConflict(a, b lockWant) bool {
	if a.all || b.all {
		return true
	}
	for _, x := range a.rows {
		if slices.Contains(b.rows, x) {
			return true
		}
	}
	return false
}

package duckengine

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// lockModel is what the write lock's rules must agree with, kept by the test on its own: the
// holder, the waiters in the order they came, and the holder's work.
type lockModel struct {
	holder  uint64
	queue   []lockWaiter
	tokens  []uint64 // begin's tokens not yet ended
	running int
	moved   time.Duration
}

// TestLockRules drives the write lock's rules step by step on a clock of the test's own:
// no two writers hold the lock; the lock goes to its waiters first come, first served; a
// waiter is served, or leaves at its deadline and not before; a waiter gives up on a holder
// only once it sat idle for idleAfter (nothing under way, nothing begun or ended), never on a
// holder with a statement or a result still under way however long; wakeAt wakes a waiter no
// later than the rules would answer it.
func TestLockRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r lockRules
		var m lockModel
		var now time.Duration
		var ids uint64
		waiterOf := func(t *rapid.T) (lockWaiter, bool) {
			if len(m.queue) == 0 {
				return lockWaiter{}, false
			}
			return m.queue[rapid.IntRange(0, len(m.queue)-1).Draw(t, "waiter")], true
		}
		removeWaiter := func(id uint64) {
			m.queue = slices.DeleteFunc(m.queue, func(w lockWaiter) bool { return w.id == id })
		}
		grantNext := func(t *rapid.T, next uint64) {
			m.holder, m.tokens, m.running = 0, nil, 0
			if len(m.queue) == 0 {
				if next != 0 {
					t.Fatalf("the lock went to %d with no one waiting", next)
				}
				return
			}
			if want := m.queue[0].id; next != want {
				t.Fatalf("the lock went to %d; want %d, the first to come of %v", next, want, m.queue)
			}
			m.queue = m.queue[1:]
			m.holder, m.moved = next, now
		}
		t.Repeat(map[string]func(*rapid.T){
			"request": func(t *rapid.T) {
				ids++
				w := lockWaiter{id: ids, since: now, idle: rapid.Bool().Draw(t, "idle")}
				if rapid.Bool().Draw(t, "bounded") {
					w.deadline = now + time.Duration(rapid.IntRange(1, 5000).Draw(t, "timeout ms"))*time.Millisecond
				}
				nowait := rapid.IntRange(0, 4).Draw(t, "nowait") == 0
				got := r.request(w, nowait)
				switch {
				case m.holder == 0:
					if got != lockGranted {
						t.Fatalf("request of a free lock: %d; want it granted", got)
					}
					m.holder, m.moved = w.id, now
				case nowait:
					if got != lockBusy {
						t.Fatalf("nowait request of a held lock: %d; want busy", got)
					}
				default:
					if got != lockWaiting {
						t.Fatalf("request of a held lock: %d; want to wait", got)
					}
					m.queue = append(m.queue, w)
				}
			},
			"release": func(t *rapid.T) {
				if m.holder == 0 {
					t.Skip("free")
				}
				grantNext(t, r.release(now))
			},
			"begin": func(t *rapid.T) {
				token := r.begin(now)
				if token != m.holder {
					t.Fatalf("begin's token %d; want the holder %d", token, m.holder)
				}
				if m.holder != 0 {
					m.tokens = append(m.tokens, token)
					m.running++
					m.moved = now
				}
			},
			"end": func(t *rapid.T) {
				if len(m.tokens) == 0 || rapid.Bool().Draw(t, "an earlier holder's") {
					stale := uint64(rapid.IntRange(0, int(ids)).Draw(t, "stale token"))
					if stale == m.holder && len(m.tokens) > 0 {
						t.Skip("the holder's own")
					}
					r.end(stale, now)
					if r.running != m.running {
						t.Fatalf("a stale end changed the holder's work: %d, want %d", r.running, m.running)
					}
					return
				}
				r.end(m.tokens[0], now)
				m.tokens = m.tokens[1:]
				m.running--
				m.moved = now
			},
			"leave": func(t *rapid.T) {
				w, ok := waiterOf(t)
				if !ok {
					t.Skip("no waiter")
				}
				if next := r.leave(w.id, now); next != 0 {
					t.Fatalf("a waiter that left gave the lock to %d", next)
				}
				removeWaiter(w.id)
			},
			"holder leaves": func(t *rapid.T) {
				if m.holder == 0 {
					t.Skip("free")
				}
				grantNext(t, r.leave(m.holder, now))
			},
			"time passes": func(t *rapid.T) {
				now += time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms")) * time.Millisecond
			},
			"check": func(t *rapid.T) {
				w, ok := waiterOf(t)
				if !ok {
					t.Skip("no waiter")
				}
				timedOut := w.deadline > 0 && now >= w.deadline
				idle := w.idle && m.running == 0 && now-max(w.since, m.moved) >= idleAfter
				switch got := r.check(w.id, now); {
				case timedOut:
					if got != lockTimedOut {
						t.Fatalf("waiter %d past its deadline %v at %v: %d; want timed out", w.id, w.deadline, now, got)
					}
				case idle:
					if got != lockIdle {
						t.Fatalf("waiter %d, the holder idle since %v, at %v: %d; want given up", w.id, m.moved, now, got)
					}
				case got != lockWaiting:
					t.Fatalf("waiter %d at %v (deadline %v, holder moved %v, %d under way): %d; want it still waiting", w.id, now, w.deadline, m.moved, m.running, got)
				}
				if timedOut || idle {
					removeWaiter(w.id)
				}
			},
			"": func(t *rapid.T) {
				if r.holder != m.holder {
					t.Fatalf("holder %d; want %d", r.holder, m.holder)
				}
				if r.holder == 0 && len(r.queue) > 0 {
					t.Fatalf("waiters %v wait for a free lock", r.queue)
				}
				if !slices.Equal(r.queue, m.queue) {
					t.Fatalf("waiters %v; want %v", r.queue, m.queue)
				}
				if r.running != m.running {
					t.Fatalf("holder's work under way %d; want %d", r.running, m.running)
				}
				for _, w := range m.queue { // wakeAt wakes a waiter no later than it is answered
					at := r.wakeAt(w.id, now)
					if at >= 0 && at < now {
						t.Fatalf("waiter %d woken at %v, before now %v", w.id, at, now)
					}
					if at < 0 && (w.deadline > 0 || w.idle) {
						t.Fatalf("waiter %d (deadline %v, idle %v) never woken", w.id, w.deadline, w.idle)
					}
					if at < 0 || m.running > 0 && w.deadline == 0 {
						continue
					}
					c := r
					c.queue = slices.Clone(r.queue)
					if m.running > 0 {
						at = w.deadline
					}
					if got := c.check(w.id, at); got == lockWaiting {
						t.Fatalf("waiter %d woken at %v and still waiting (deadline %v, holder moved %v)", w.id, at, w.deadline, m.moved)
					}
				}
			},
		})
	})
}

// TestLockRulesHolderAtWork: a holder whose one statement (or result being read) runs for
// a minute is waited for that minute; once it ends, its waiter gives up on it idleAfter later
// and not before.
func TestLockRulesHolderAtWork(t *testing.T) {
	var r lockRules
	s := time.Second
	if got := r.request(lockWaiter{id: 1}, false); got != lockGranted {
		t.Fatalf("first request: %d", got)
	}
	token := r.begin(0)
	if got := r.request(lockWaiter{id: 2, since: s, idle: true}, false); got != lockWaiting {
		t.Fatalf("second request: %d", got)
	}
	if got := r.check(2, 60*s); got != lockWaiting {
		t.Fatalf("a waiter for a holder streaming a result for a minute: %d; want it waiting", got)
	}
	r.end(token, 60*s)
	if got := r.check(2, 60*s+idleAfter-time.Millisecond); got != lockWaiting {
		t.Fatalf("a waiter just short of idleAfter past the holder's end: %d; want it waiting", got)
	}
	if got := r.check(2, 60*s+idleAfter); got != lockIdle {
		t.Fatalf("a waiter idleAfter past the holder's end: %d; want it given up", got)
	}
}

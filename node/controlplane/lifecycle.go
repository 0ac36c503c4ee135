package controlplane

import (
	"fmt"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// Lifecycle is one worker's registry state as plain data: healthy -> stale (no heartbeat for
// StaleAfter) -> evicted (stale for Grace). A heartbeat while healthy or stale makes it healthy;
// evicted is final for this registration (its token is revoked; the worker must register again).
// Every method takes the time explicitly, so tests drive it without clocks.
type Lifecycle struct {
	State      string    // workerapi.StateHealthy, StateStale or StateEvicted
	StateSince time.Time // when State was entered
	LastSeen   time.Time // last heartbeat, registration, or fresh window granted at start
}

// Timeouts are the reaper's limits.
type Timeouts struct {
	StaleAfter time.Duration // silence before a healthy worker turns stale
	Grace      time.Duration // time a worker stays stale before eviction
}

// Transition is a state change, for logs and metrics.
type Transition struct {
	From, To string
}

// Changed reports whether the state moved.
func (t Transition) Changed() bool { return t.From != t.To }

// NewLifecycle starts a registration at now.
func NewLifecycle(now time.Time) Lifecycle {
	return Lifecycle{State: workerapi.StateHealthy, StateSince: now, LastSeen: now}
}

// Heartbeat records a heartbeat at now. It returns ok=false for an evicted worker, whose
// heartbeats no longer count.
func (l *Lifecycle) Heartbeat(now time.Time) (Transition, bool) {
	l.assertValid()
	from := l.State
	if l.State == workerapi.StateEvicted {
		return Transition{from, from}, false
	}
	if now.After(l.LastSeen) {
		l.LastSeen = now
	}
	if l.State != workerapi.StateHealthy {
		l.enter(workerapi.StateHealthy, now)
	}
	return Transition{from, l.State}, true
}

// Tick moves the worker along by time alone. One tick makes at most one step, and eviction
// counts the grace from when the reaper saw the worker stale, so a control plane that was
// paused (or a slow reaper) never evicts a worker it did not first give a full grace period.
func (l *Lifecycle) Tick(now time.Time, t Timeouts) Transition {
	l.assertValid()
	from := l.State
	switch l.State {
	case workerapi.StateHealthy:
		if now.Sub(l.LastSeen) >= t.StaleAfter {
			l.enter(workerapi.StateStale, now)
		}
	case workerapi.StateStale:
		if now.Sub(l.StateSince) >= t.Grace {
			l.enter(workerapi.StateEvicted, now)
		}
	}
	return Transition{from, l.State}
}

// FreshWindow is applied to every known, non-evicted worker when a control plane starts: the
// silence before the start is not held against anyone, so a restart never evicts the fleet.
func (l *Lifecycle) FreshWindow(now time.Time) {
	l.assertValid()
	if l.State == workerapi.StateEvicted {
		return
	}
	l.LastSeen = now
	l.enter(workerapi.StateHealthy, now)
}

// Online is true until the worker is evicted.
func (l *Lifecycle) Online() bool { return l.State != workerapi.StateEvicted }

func (l *Lifecycle) enter(state string, now time.Time) {
	l.State = state
	l.StateSince = now
}

func (l *Lifecycle) assertValid() {
	switch l.State {
	case workerapi.StateHealthy, workerapi.StateStale, workerapi.StateEvicted:
	default:
		panic(fmt.Sprintf("controlplane: lifecycle in unknown state %+v", *l))
	}
}

package duckengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// PostgreSQL's deadlock detection. Two clients each waiting for a lock the other holds (the
// write lock and an advisory lock, or two advisory locks taken in opposite orders) waited
// forever: neither wait has an end of its own, and a holder waiting for a lock is at work,
// never given up on as idle. PostgreSQL checks once per wait, deadlock_timeout (1 s unless
// set) after the wait began, whether the waiter is in a cycle of waits, and answers the one
// that finds it 40P01 "deadlock detected", DETAIL naming each process, what it waits for and
// who blocks it; its transaction ends there and its locks go to the others. So here: every
// PostgreSQL client's wait for the write lock or an advisory lock enters the engine's
// waitGraph with whom it waits for, and checks the graph once at its deadlock_timeout
// (SET LOCAL deadlock_timeout, or the startup option -c deadlock_timeout=).

// deadlockTimeoutDefault is PostgreSQL's deadlock_timeout.
const deadlockTimeoutDefault = time.Second

// waitGraph is an engine's waits: each waiting party (a PostgreSQL session's pid, the
// request's SessionID) and what it waits for. Lock order: a wait's blockers take their lock's
// mutex inside the graph's, so a lock never enters or leaves the graph with its mutex held.
type waitGraph struct {
	mu      sync.Mutex
	waiting map[uint32]waitFor
}

// waitFor is what one party waits for: PostgreSQL's words for it ("ExclusiveLock on advisory
// lock [...]") and the parties it waits for, read when a check runs.
type waitFor func() (what string, blockers []uint32)

// enter notes that party p waits (for w) until the func it answers is called.
func (g *waitGraph) enter(p uint32, w waitFor) (leave func()) {
	if g == nil || p == 0 {
		return func() {}
	}
	g.mu.Lock()
	if g.waiting == nil {
		g.waiting = map[uint32]waitFor{}
	}
	g.waiting[p] = w
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.waiting, p)
		g.mu.Unlock()
	}
}

// deadlock is PostgreSQL's answer to party p when its wait is in a cycle of waits (40P01,
// DETAIL naming each process of the cycle), nil when not.
func (g *waitGraph) deadlock(p uint32) error {
	if g == nil || p == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	whats := map[uint32]string{}
	cycle := waitCycle(p, func(q uint32) []uint32 {
		w, ok := g.waiting[q]
		if !ok {
			return nil
		}
		what, blockers := w()
		whats[q] = what
		return blockers
	})
	if cycle == nil {
		return nil
	}
	lines := make([]string, len(cycle))
	for i, q := range cycle {
		lines[i] = fmt.Sprintf("Process %d waits for %s; blocked by process %d.", q, whats[q], cycle[(i+1)%len(cycle)])
	}
	return &pgFieldsError{qe: errDeadlock, pg: &pgconn.PgError{Severity: "ERROR", Code: sqlstate.DeadlockDetected,
		Message: errDeadlock.Message, Detail: strings.Join(lines, "\n"), Hint: "See server log for query details."}}
}

var errDeadlock = &query.Error{Code: sqlstate.DeadlockDetected, Message: "deadlock detected"}

// isDeadlock: err is deadlock's answer.
func isDeadlock(err error) bool { return errors.Is(err, errDeadlock) }

// deadlockCheck is a wait's one check for a deadlock: its timer's channel (nil: no check,
// the waiter is not a PostgreSQL session) and the check.
type deadlockCheck struct {
	timer *time.Timer
	check func() error
}

// watch enters party p's wait in g and sets its check at timeout (0: the default); stop
// ends both.
func (g *waitGraph) watch(p uint32, timeout time.Duration, w waitFor) (dc deadlockCheck, stop func()) {
	if g == nil || p == 0 {
		return deadlockCheck{}, func() {}
	}
	if timeout <= 0 {
		timeout = deadlockTimeoutDefault
	}
	leave := g.enter(p, w)
	dc = deadlockCheck{timer: time.NewTimer(timeout), check: func() error { return g.deadlock(p) }} //determinism:ok a real engine's lock wait (the simulator has no DuckDB)
	return dc, func() { dc.timer.Stop(); leave() }
}

// fired is the check's channel; nil (never ready) when there is no check.
func (dc deadlockCheck) fired() <-chan time.Time {
	if dc.timer == nil {
		return nil
	}
	return dc.timer.C
}

// abortDeadlocked ends the transaction of a session answered deadlock there: PostgreSQL
// aborts it at the error and lets its locks go then, not at the client's ROLLBACK, so that the
// others in the cycle go on. DuckDB's transaction is rolled back (its writes must not stand
// in the way of the next writer's) and another begun, failed, for the client's ROLLBACK.
func (s *session) abortDeadlocked(ctx context.Context) {
	if s.status == 'E' {
		ctx = context.WithoutCancel(ctx)
		s.holdLast(ctx)
		if s.exec(ctx, "ROLLBACK") != nil || s.exec(ctx, "BEGIN TRANSACTION") != nil {
			s.clean = false // not given to another client as it is
		}
	}
	s.releaseWrites()
	if s.holder != "" {
		s.e.advisory.releaseAll(s.holder, false, true)
		s.holder = ""
	}
}

// deadlockTimeoutOf is the deadlock_timeout for q: the transaction's SET LOCAL, else the
// connection's startup option (0: the default).
func (s *session) deadlockTimeoutOf(q *query.Request) time.Duration {
	if s.localDeadlockTimeout != nil {
		return *s.localDeadlockTimeout
	}
	return startupDeadlockTimeout(q)
}

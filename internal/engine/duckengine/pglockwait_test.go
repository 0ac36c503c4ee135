package duckengine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// TestOneWaitEachProtocolsErrors: the one wait for the write lock ends with each protocol's
// own error: PostgreSQL's lock_timeout 55P03, statement_timeout and cancel 57014, NOWAIT 55P03
// naming the relation; MySQL's 1205 for NOWAIT and innodb_lock_wait_timeout past a conflict,
// the statement run unlocked (errUnlocked) past the first wait's budget; and the lock, once
// released, goes to the waiter that came first.
func TestOneWaitEachProtocolsErrors(t *testing.T) {
	var l writeLock
	ctx := context.Background()
	if err := l.take(ctx, &query.Request{}, 0, 0, 0, false, ""); err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		w    lockWait
		want error
	}{
		{"lock_timeout", ctx, pgWait(20*ms, 0, false, ""), errLockTimeout},
		{"statement_timeout first", ctx, pgWait(time.Minute, 20*ms, false, ""), errStatementTimeout},
		{"lock_timeout first", ctx, pgWait(20*ms, time.Minute, false, ""), errLockTimeout},
		{"cancel", canceled, pgWait(0, 0, false, ""), errCanceledByClient},
		{"NOWAIT", ctx, pgWait(0, 0, true, `"acct"`), nil},
		{"innodb_lock_wait_timeout past a conflict", ctx, lockWait{lockTimeout: 20 * ms, busy: errMySQLLockWait, lockTimedOut: errMySQLLockWait, canceled: mysqlCanceled}, errMySQLLockWait},
		{"MySQL NOWAIT", ctx, lockWait{nowait: true, busy: errMySQLLockWait, canceled: mysqlCanceled}, errMySQLLockWait},
		{"MySQL first wait's budget", ctx, lockWait{lockTimeout: 20 * ms, idle: true, lockTimedOut: errUnlocked, canceled: mysqlCanceled}, errUnlocked},
		{"KILL QUERY", canceled, lockWait{lockTimeout: time.Minute, canceled: mysqlCanceled}, context.Canceled},
	} {
		err := l.wait(c.ctx, c.w)
		if c.name == "NOWAIT" {
			if !errors.Is(err, c.w.busy) || !strings.Contains(err.Error(), `could not obtain lock on row in relation "acct"`) {
				t.Errorf("%s: %v; want 55P03 naming \"acct\"", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	l.mu.Lock()
	waiting := len(l.rules.queue)
	l.mu.Unlock()
	if waiting != 0 {
		t.Fatalf("%d waiters left in the queue after their waits ended", waiting)
	}
	served := make(chan int, 2)
	for i := 1; i <= 2; i++ {
		go func() {
			if err := l.take(ctx, &query.Request{}, 0, 0, 0, false, ""); err != nil {
				t.Error(err)
			}
			served <- i
		}()
		for { // the second comes after the first
			l.mu.Lock()
			n := len(l.rules.queue)
			l.mu.Unlock()
			if n == i {
				break
			}
			time.Sleep(ms)
		}
	}
	l.release()
	if first := <-served; first != 1 {
		t.Fatalf("the lock went to waiter %d; want 1, the first to come", first)
	}
	l.release()
	if second := <-served; second != 2 {
		t.Fatalf("then to waiter %d; want 2", second)
	}
	l.release()
}

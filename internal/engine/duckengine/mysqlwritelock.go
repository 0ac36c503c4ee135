package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// MySQL clients' writers wait as InnoDB's do, sharing the database's one write lock with
// PostgreSQL clients (pgwritelock.go). Without it a MySQL client's UPDATE of a row another
// client's open transaction wrote failed at once with DuckDB's conflict (1213), where MariaDB
// makes it wait for that transaction and then runs it on the row as committed.
//
// A MySQL client's UPDATE, DELETE, REPLACE, INSERT ... ON DUPLICATE KEY UPDATE and SELECT
// ... FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE take the lock as a PostgreSQL client's
// writes do: a transaction holds it to its end, a statement outside one for the statement; a
// plain INSERT takes none (InnoDB makes it wait for no one but on a unique key). The wait is
// bounded by innodb_lock_wait_timeout (MariaDB's default 50 s; SET [SESSION] takes it per
// session), but, the lock being the whole database's, a writer runs without it once that passes
// or the lock's holder sat idle for 2 s (pgwritelock.go): writers of different rows, whom
// InnoDB never makes wait, go on. When such a run
// meets DuckDB's conflict (the other transaction wrote the same row), the writer waits for the
// lock again, for the rest of innodb_lock_wait_timeout and without the 2 s bound (InnoDB would
// wait as long), then runs its statement again on a fresh snapshot: its transaction's kept
// writes run again first (mysqlstmtundo.go's replay; one that changes another number of rows
// than it told its client ends the transaction as a deadlock does). So:
//   - the wait ends with the lock, and the statement runs on the rows the other transaction
//     committed, as on MariaDB;
//   - innodb_lock_wait_timeout passes: 1205 "Lock wait timeout exceeded; try restarting
//     transaction", the statement alone refused and the transaction going on (MariaDB's
//     default, innodb_rollback_on_timeout off);
//   - the transaction cannot be set up again (its log lost: RAND(), LOAD DATA LOCAL, a full
//     log) or conflicts again under the lock: 1213 "Deadlock found when trying to get lock;
//     try restarting transaction", the whole transaction rolled back, as InnoDB's deadlock.
//
// FOR UPDATE NOWAIT (and MariaDB's WAIT 0) answers 1205 at once when another transaction holds
// the lock, whatever rows it wrote: the lock does not know them.

// mysqlDeadlockMessage and mysqlLockWaitMessage are MariaDB's words for its 1213 and 1205.
const (
	mysqlDeadlockMessage = "Deadlock found when trying to get lock; try restarting transaction"
	mysqlLockWaitMessage = "Lock wait timeout exceeded; try restarting transaction"
)

// conflictMessage is the message of DuckDB's write-write conflict as clients get it (duckError).
const conflictMessage = "could not serialize access due to concurrent update"

var (
	errMySQLDeadlock = &query.Error{Code: sqlstate.DeadlockDetected, Message: mysqlDeadlockMessage}
	errMySQLLockWait = &query.Error{Code: sqlstate.LockNotAvailable, Message: mysqlLockWaitMessage}
)

// mysqlLockWaitDefault is MariaDB's innodb_lock_wait_timeout.
const mysqlLockWaitDefault = 50 * time.Second

// isWriteConflict: err is DuckDB's conflict of two transactions writing one row.
func isWriteConflict(err error) bool {
	var qe *query.Error
	return errors.As(err, &qe) && qe.Code == sqlstate.SerializationFailure && qe.Message == conflictMessage
}

// mysqlWriteIntent reads a MySQL client's statement as writeIntent does a PostgreSQL
// client's: whether it takes the write lock, and whether without waiting (NOWAIT, WAIT 0).
func mysqlWriteIntent(q *query.Request) (write, nowait bool) {
	var words []string // significant words and symbols at depth 0, lower case
	depth := 0
	for _, t := range q.Analysis().Tokens {
		if !t.Significant() {
			continue
		}
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 {
			words = append(words, strings.ToLower(t.Text))
		}
	}
	if len(words) == 0 {
		return false, false
	}
	switch words[0] {
	case "insert": // a plain INSERT waits for no one on MariaDB (but on a unique key)
		return hasRun(words, "duplicate", "key"), false
	case "update", "delete", "replace": // not DDL: MariaDB's metadata locks make no writer wait for a row
		return true, false
	case "select", "with", "(":
		if !mayLock(q.SQL) || hasRun(words, "skip", "locked") {
			return false, false
		}
		if !hasRun(words, "for", "update") && !hasRun(words, "for", "share") && !hasRun(words, "in", "share") {
			return false, false
		}
		return true, slices.Contains(words, "nowait") || hasRun(words, "wait", "0")
	}
	return false, false
}

// mysqlLockWait is innodb_lock_wait_timeout as conn's session set it (mysqlvars.go keeps it);
// ok false when it could not be read (the default then).
func mysqlLockWait(ctx context.Context, conn *sql.Conn) (d time.Duration, ok bool) {
	var v sql.NullString
	if conn == nil {
		return mysqlLockWaitDefault, true
	}
	if err := conn.QueryRowContext(ctx, "SELECT CAST(getvariable('qf_sv_innodb_lock_wait_timeout') AS VARCHAR)").Scan(&v); err != nil {
		return mysqlLockWaitDefault, false // a failed transaction reads nothing
	}
	n, err := strconv.ParseInt(v.String, 10, 64)
	if !v.Valid || err != nil || n < 0 {
		return mysqlLockWaitDefault, true
	}
	return time.Duration(n) * time.Second, true
}

// mysqlLockBudget is the session's innodb_lock_wait_timeout, read once (a SET of it forgets
// it: Execute) and only when a writer must wait.
func (s *session) mysqlLockBudget(ctx context.Context) time.Duration {
	if s.lockBudget == 0 {
		d, ok := mysqlLockWait(ctx, s.conn)
		if !ok {
			return d
		}
		s.lockBudget = d + 1 // 0 is "not read"; innodb_lock_wait_timeout 0 is 1 ns
	}
	return s.lockBudget - 1
}

// mysqlTakeWrites takes the write lock for a MySQL client's statement: errUnlocked when
// budget() passed or the holder sat idle for unlockedAfter, and the statement runs without it;
// waited is how long it waited.
func (e *Engine) mysqlTakeWrites(ctx context.Context, budget func() time.Duration, nowait bool) (waited time.Duration, err error) {
	if e.writes.tryTake() {
		return 0, nil
	}
	w := lockWait{nowait: true, busy: errMySQLLockWait, idle: true, lockTimedOut: errUnlocked, canceled: mysqlCanceled}
	if !nowait {
		// innodb_lock_wait_timeout 0: no wait (but a conflict's, waitWrites); past the
		// budget, as past the idle bound, the statement runs and sees.
		w.lockTimeout = budget()
		w.nowait, w.busy = w.lockTimeout == 0, errUnlocked
	}
	start := time.Now() //determinism:ok a real engine's lock wait (the simulator has no DuckDB)
	err = e.writes.wait(ctx, w)
	return time.Since(start), err //determinism:ok as above
}

// mysqlCanceled: KILL QUERY, the client gone: the frontend's 1317.
func mysqlCanceled(ctx context.Context) error { return ctx.Err() }

// waitWrites waits for the write lock without unlockedAfter's bound: until it is free, for
// at most budget (then MariaDB's 1205), or until ctx ends.
func (e *Engine) waitWrites(ctx context.Context, budget time.Duration) error {
	return e.writes.wait(ctx, lockWait{
		lockTimeout: budget, nowait: budget <= 0,
		busy: errMySQLLockWait, lockTimedOut: errMySQLLockWait, canceled: mysqlCanceled,
	})
}

// mysqlWriteTurn takes the write lock for a MySQL client's statement in the session, as
// writeLocked does a PostgreSQL client's; the wait's own error refuses the statement alone
// (nothing ran: MariaDB's transaction goes on after a 1205).
func (s *session) mysqlWriteTurn(ctx context.Context, nowait bool) error {
	waited, err := s.e.mysqlTakeWrites(ctx, func() time.Duration { return s.mysqlLockBudget(ctx) }, nowait)
	s.lockWaited = waited
	if err != nil && err != errUnlocked {
		return err
	}
	s.writing = err == nil
	if s.writing && s.status == 'T' && s.snapshot && s.plainSoFar {
		// Only reads ran: a fresh snapshot holds every write committed before the lock was
		// ours, which InnoDB's UPDATE reads (a locking read sees the newest rows).
		s.holdLast(ctx)
		if err := s.exec(ctx, "ROLLBACK"); err != nil {
			s.fail()
			return err
		}
		if err := s.exec(ctx, "BEGIN TRANSACTION"); err != nil {
			s.status = 'I'
			s.releaseWrites()
			return err
		}
	}
	return nil
}

// afterConflict answers a MySQL client's statement q that met DuckDB's conflict with another
// open transaction's write (err): it waits for that transaction as InnoDB would, sets its own
// transaction up again and runs q once more (see the top of this file). ids are the
// AUTO_INCREMENT ids q reserved, given to it again.
func (s *session) afterConflict(ctx context.Context, q *query.Request, inTx bool, ids *stmtIDs, err error) (query.Rows, error) {
	if !inTx || s.status == 'I' {
		if inTx { // the transaction ended with the statement (a DDL's implicit commit)
			return nil, err
		}
		return s.e.runAfterConflict(ctx, s.mysqlLockBudget(ctx)-s.lockWaited, func(ctx context.Context) (query.Rows, error) { return s.execute(ctx, q) })
	}
	if s.undo.lost {
		return nil, s.mysqlDeadlock(ctx)
	}
	if !s.writing {
		if werr := s.e.waitWrites(ctx, s.mysqlLockBudget(ctx)-s.lockWaited); werr != nil {
			s.undoStatement(ctx) // the transaction as it was before q, without the lock
			return nil, werr
		}
		s.writing = true
	}
	if rerr := s.replay(ctx); rerr != nil {
		return nil, s.mysqlDeadlock(ctx)
	}
	var saved []int64
	if ids != nil {
		saved = slices.Clone(ids.ids)
		ids.ids, ids.replaying = slices.Clone(saved), true
	}
	rows, err := s.execute(ctx, q)
	if ids != nil {
		ids.ids, ids.replaying = saved, false
	}
	if isWriteConflict(err) { // another transaction wrote the row without the lock (a plain INSERT)
		return nil, s.mysqlDeadlock(ctx)
	}
	return rows, err
}

// mysqlDeadlock rolls the session's transaction back and answers MariaDB's deadlock.
func (s *session) mysqlDeadlock(ctx context.Context) error {
	if s.status != 'I' {
		_, _ = s.transaction(context.WithoutCancel(ctx), statement{tx: txRollback})
	}
	s.undo.reset()
	s.releaseWrites()
	return errMySQLDeadlock
}

// runAfterConflict runs a MySQL client's statement outside a transaction again once the write
// lock is free (for at most budget), holding it until the statement's rows are read.
func (e *Engine) runAfterConflict(ctx context.Context, budget time.Duration, run func(context.Context) (query.Rows, error)) (query.Rows, error) {
	if err := e.waitWrites(ctx, budget); err != nil {
		return nil, err
	}
	rows, err := run(context.WithValue(ctx, heldWrites{}, true))
	return withWrites(rows, err, e.writes.release)
}

// mysqlExecute runs a MySQL client's statement outside a session (Engine.Execute): under the
// write lock when it writes, waiting again after a conflict.
func (e *Engine) mysqlExecute(ctx context.Context, q *query.Request) (query.Rows, error) {
	write, nowait := mysqlWriteIntent(q)
	if !write || holdsWrites(ctx) {
		return e.execute(ctx, q)
	}
	waited, err := e.mysqlTakeWrites(ctx, func() time.Duration { return mysqlLockWaitDefault }, nowait)
	if err != nil && err != errUnlocked {
		return nil, err
	}
	if err == nil {
		rows, err := e.execute(context.WithValue(ctx, heldWrites{}, true), q)
		return withWrites(rows, err, e.writes.release)
	}
	rows, err := e.execute(ctx, q)
	if !isWriteConflict(err) {
		return rows, err
	}
	return e.runAfterConflict(ctx, mysqlLockWaitDefault-waited, func(ctx context.Context) (query.Rows, error) { return e.execute(ctx, q) })
}

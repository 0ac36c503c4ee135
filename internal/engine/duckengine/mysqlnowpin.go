package duckengine

import (
	"context"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// NOW() in a MySQL client's transaction. MariaDB's NOW() is its statement's start: each
// statement of a transaction reads its own time, and every call in one statement the same.
// DuckDB's current_timestamp is its transaction's start, one time for every statement of a
// transaction; and a refused statement's undo and ROLLBACK TO SAVEPOINT run the kept writes
// again in a new DuckDB transaction (mysqlstmtundo.go), whose start is later still.
//
// So in a MySQL client's transaction the NOW() family and ON UPDATE CURRENT_TIMESTAMP are
// written as a literal: the statement's start, from this process's clock when the client's
// statement came (pinnedNow), kept with the statement in the log, so that a run again writes
// the same text; learning the time costs no statement. (DuckDB's time cannot be read after a
// refusal: it refuses every statement of an aborted transaction.) Outside a transaction nothing
// runs again, and mysqlNow reads DuckDB's time, the statement's own transaction's start. What
// still reads mysqlNow in a transaction (a DEFAULT CURRENT_TIMESTAMP DuckDB fills) finds
// qf_now set to the transaction's first statement's time once the writes run again.
//
// SYSDATE() is MariaDB's time of the call: mysqlSysdate, a Go function DuckDB calls each time
// (scalars.go). In a transaction's write, which may run again, it is the statement's time, as
// NOW() (MariaDB's calls in one statement differ by the microseconds the statement took).
const (
	mysqlNow     = "timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))"
	mysqlSysdate = "qf_sysdate()"
)

// txNowKey marks a MySQL client's statement in a transaction: its value is the session's log,
// which keeps the statement's time.
type txNowKey struct{}

func withTxNow(ctx context.Context, l *stmtLog) context.Context {
	return context.WithValue(ctx, txNowKey{}, l)
}

// startStatement notes the start of a MySQL client's statement in the transaction, its NOW().
func (l *stmtLog) startStatement(sqlText string) {
	l.start = time.Now() //determinism:ok a real engine's NOW() (the simulator has no DuckDB)
	l.now, l.writing = "", changesData(sqlText)
}

// pinnedNow is sqlText with mysqlNow (and, in a write, mysqlSysdate) written as the
// statement's time when ctx is a MySQL client's statement in a transaction.
func pinnedNow(ctx context.Context, sqlText string) string {
	hasNow, hasSysdate := strings.Contains(sqlText, mysqlNow), strings.Contains(sqlText, mysqlSysdate)
	if !hasNow && !hasSysdate {
		return sqlText
	}
	now, ok := transactionNow(ctx)
	if !ok {
		return sqlText
	}
	literal := "TIMESTAMP " + sqltok.StandardString(now)
	if hasSysdate && ctx.Value(txNowKey{}).(*stmtLog).writing {
		sqlText = strings.ReplaceAll(sqlText, mysqlSysdate, literal)
	}
	return strings.ReplaceAll(sqlText, mysqlNow, literal)
}

// transactionNow is the NOW() of the MySQL client's statement in a transaction ctx runs, UTC;
// ok false outside a transaction.
func transactionNow(ctx context.Context) (now string, ok bool) {
	l, _ := ctx.Value(txNowKey{}).(*stmtLog)
	if l == nil {
		return "", false
	}
	if l.now == "" {
		// DuckDB's current_timestamp is its own clock's, microseconds, as this one's
		l.now = l.start.UTC().Format("2006-01-02 15:04:05.999999")
		if l.first == "" {
			l.first = l.now
		}
	}
	return l.now, true
}

// pinNow sets qf_now to the transaction's first statement's time, before the kept writes run again, for what
// reads mysqlNow in the transaction.
func (s *session) pinNow(ctx context.Context) error {
	if s.undo.first == "" || s.nowPinned {
		return nil
	}
	s.clean = false // a variable of the connection's
	s.nowPinned = true
	_, err := s.conn.ExecContext(ctx, "SET VARIABLE qf_now = CAST("+sqltok.StandardString(s.undo.first+"+00")+" AS TIMESTAMPTZ)")
	return wrapErr(err)
}

// unpinNow lets NOW() read DuckDB's transaction start again, once the transaction ended.
func (s *session) unpinNow(ctx context.Context) {
	if s.nowPinned && s.status == 'I' {
		s.nowPinned = false
		if _, err := s.conn.ExecContext(context.WithoutCancel(ctx), "RESET VARIABLE qf_now"); err != nil && !strings.Contains(err.Error(), "qf_now") {
			s.clean = false
		}
	}
}

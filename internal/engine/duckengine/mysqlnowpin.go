package duckengine

import (
	"context"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// NOW() in a MySQL client's transaction run again. DuckDB's current_timestamp is its
// transaction's start, so every statement of a transaction reads one time. A refused
// statement's undo and ROLLBACK TO SAVEPOINT run the kept writes again in a new DuckDB
// transaction (mysqlstmtundo.go), whose start is later: a row written with NOW() (or by an ON
// UPDATE CURRENT_TIMESTAMP column) would get another time than the one its client had read
// back, and the transaction's NOW() would move.
//
// So in a MySQL client's transaction the NOW() family and ON UPDATE CURRENT_TIMESTAMP are
// written as a literal, the transaction's time, which this process's clock gives the first
// statement that names it (pinnedNow): a run again writes the same text, and learning the
// time costs no statement. DuckDB's transaction time was read once a transaction whose kept
// write merely contained "update" or "now" before; a reading of it after a refusal is not
// possible, DuckDB refusing every statement of an aborted transaction. Outside a transaction
// nothing runs again, and mysqlNow reads DuckDB's time. What still reads mysqlNow in a
// transaction (the transaction's time not yet taken where a text is built, e.g. a statement
// that failed before it) finds qf_now set to the literal's time once the writes run again.
const mysqlNow = "timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))"

// txNowKey marks a MySQL client's statement in a transaction: its value is the session's log,
// which keeps the transaction's time.
type txNowKey struct{}

func withTxNow(ctx context.Context, l *stmtLog) context.Context {
	return context.WithValue(ctx, txNowKey{}, l)
}

// pinnedNow is sqlText with mysqlNow written as the transaction's time when ctx is a MySQL
// client's statement in a transaction, the time taken now when the transaction has none yet.
func pinnedNow(ctx context.Context, sqlText string) string {
	if !strings.Contains(sqlText, mysqlNow) {
		return sqlText
	}
	if now, ok := transactionNow(ctx); ok {
		return strings.ReplaceAll(sqlText, mysqlNow, "TIMESTAMP "+sqltok.StandardString(now))
	}
	return sqlText
}

// transactionNow is the time of the MySQL client's transaction ctx's statement runs in, UTC,
// taken now when the transaction has none yet; ok false outside a transaction.
func transactionNow(ctx context.Context) (now string, ok bool) {
	l, _ := ctx.Value(txNowKey{}).(*stmtLog)
	if l == nil {
		return "", false
	}
	if l.now == "" {
		// DuckDB's current_timestamp is its own clock's, microseconds, as this one's
		l.now = time.Now().UTC().Format("2006-01-02 15:04:05.999999") //determinism:ok a real engine's NOW() (the simulator has no DuckDB)
	}
	return l.now, true
}

// pinNow sets qf_now to the transaction's time, before the kept writes run again, for what
// reads mysqlNow in the transaction.
func (s *session) pinNow(ctx context.Context) error {
	if s.undo.now == "" || s.nowPinned {
		return nil
	}
	s.clean = false // a variable of the connection's
	s.nowPinned = true
	_, err := s.conn.ExecContext(ctx, "SET VARIABLE qf_now = CAST("+sqltok.StandardString(s.undo.now+"+00")+" AS TIMESTAMPTZ)")
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

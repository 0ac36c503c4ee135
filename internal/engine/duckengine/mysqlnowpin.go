package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// NOW() in a MySQL client's transaction run again. DuckDB's current_timestamp is its
// transaction's start, so every statement of a transaction reads one time. A refused
// statement's undo and ROLLBACK TO SAVEPOINT run the kept writes again in a new DuckDB
// transaction (mysqlstmtundo.go), whose start is later: a row written with NOW() (or by an ON
// UPDATE CURRENT_TIMESTAMP column) got another time than the one its client had read back,
// and the transaction's NOW() moved. So MySQL's NOW() family reads mysqlNow: the log notes its
// transaction's time when it keeps a statement that may write one (one read a transaction), a
// run again sets qf_now to it for the rest of the transaction, and the transaction's end
// resets it.
const mysqlNow = "timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))"

// mayWriteNow: a MySQL client's write that may write the current time: it names one of the
// NOW() family or updates (an ON UPDATE CURRENT_TIMESTAMP column).
func mayWriteNow(sqlText string) bool {
	return containsFold(sqlText, "now") || containsFold(sqlText, "current_timestamp") || containsFold(sqlText, "localtime") ||
		containsFold(sqlText, "sysdate") || containsFold(sqlText, "utc_timestamp") || containsFold(sqlText, "update")
}

// noteNow keeps the open transaction's time, once, when q may write it.
func (l *stmtLog) noteNow(ctx context.Context, conn *sql.Conn, sqlText string) {
	if l.now != "" || l.lost || !mayWriteNow(sqlText) {
		return
	}
	var now string
	if conn.QueryRowContext(ctx, "SELECT CAST(coalesce(getvariable('qf_now'), current_timestamp) AS VARCHAR)").Scan(&now) != nil {
		l.lose(len(l.stmts)) // it cannot be given again
		return
	}
	l.now = now
}

// pinNow sets the transaction's NOW() to the time its first DuckDB transaction had, before
// the kept writes run again.
func (s *session) pinNow(ctx context.Context) error {
	if s.undo.now == "" {
		return nil
	}
	s.clean = false // a variable of the connection's
	s.nowPinned = true
	_, err := s.conn.ExecContext(ctx, "SET VARIABLE qf_now = CAST("+sqltok.StandardString(s.undo.now)+" AS TIMESTAMPTZ)")
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

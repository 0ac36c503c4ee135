package duckengine

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// ALTER TABLE t AUTO_INCREMENT [=] n, which DuckDB's parser refuses (1064): MariaDB (InnoDB)
// sets the table's counter to n, or past the largest id the table holds when n is not above
// it (lower or higher than the counter was), and accepts it for a table without an
// AUTO_INCREMENT column. Here the counter's offset (autoinc.go) is set so that the next id is
// that, as TRUNCATE sets it back to 1 (mysqlddl.go).

// mysqlAlterCounter runs a MySQL client's ALTER TABLE [db.]t AUTO_INCREMENT [=] n (its only
// option); ok is false for any other statement.
func mysqlAlterCounter(q *query.Request) (ownRun, bool) {
	if !isMySQL(q) || !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "alter") || !containsFold(q.SQL, "auto_increment") {
		return nil, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 5 || !toks[1].IsWord("table") {
		return nil, false
	}
	isName := func(t sqltok.Token) bool {
		return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent && t.Text[0] == '`'
	}
	i := 2
	if !isName(toks[i]) {
		return nil, false
	}
	db, table := "", identText(toks[i])
	if i+2 < len(toks) && toks[i+1].Text == "." && isName(toks[i+2]) {
		db, table = table, identText(toks[i+2])
		i += 2
	}
	i++
	if i >= len(toks) || !toks[i].IsWord("auto_increment") {
		return nil, false
	}
	i++
	if i < len(toks) && toks[i].Text == "=" {
		i++
	}
	if i+1 != len(toks) {
		return nil, false
	}
	n, err := strconv.ParseInt(toks[i].Text, 10, 64)
	if err != nil || n < 0 {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		return ownTransaction(ctx, conn, inTx, func() (query.Rows, error) {
			col, ok, err := readAI(ctx, conn, db, table)
			if err != nil {
				return nil, wrapErr(err)
			}
			if !ok { // no AUTO_INCREMENT column: nothing to set, once the table is there
				if _, err := conn.ExecContext(ctx, "SELECT 1 FROM "+tableRef(db, table)+" LIMIT 0"); err != nil {
					return nil, wrapErr(err)
				}
				return engine.TagRows("ALTER TABLE"), nil
			}
			if err := setCounter(ctx, conn, db, table, col, n); err != nil {
				return nil, wrapErr(err)
			}
			return engine.TagRows("ALTER TABLE"), nil
		})
	}, true
}

// setCounter sets the AUTO_INCREMENT counter of col (table's) so that its next id is n, or
// the table's largest id plus one when n is not above it.
func setCounter(ctx context.Context, conn *sql.Conn, db, table string, col aiColumn, n int64) error {
	var largest int64
	if err := conn.QueryRowContext(ctx, "SELECT coalesce(max("+quoteIdent(col.name)+"), 0)::BIGINT FROM "+tableRef(db, table)).Scan(&largest); err != nil {
		return err
	}
	target := max(n, largest+1)
	c, err := readCounter(ctx, conn, col.seq)
	if err != nil || c.value() == target {
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMENT ON SEQUENCE "+col.seq+" IS "+sqltok.StandardString(aiOffsetComment+strconv.FormatInt(target-c.next, 10)))
	return err
}

package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's INSERT ... ON DUPLICATE KEY UPDATE and REPLACE report MySQL's affected
// rows: an upsert counts 1 for a row inserted, 2 for a row updated to new values and 0 for one
// left as it was (1 under the client's CLIENT_FOUND_ROWS, as Connector/J and mysql2 ask); a
// REPLACE counts 1 for a row inserted and 2 for a row replaced. DuckDB counts 1 a row either
// way. So the statement runs between two counts of the table's rows, in one transaction: the
// rows it added were inserted, the rest of DuckDB's count were updated (or replaced).
//
// An upsert's DO UPDATE gets a WHERE that leaves a row whose values would not change alone, so
// that DuckDB counts only the rows it changed. (DuckDB before 1.5 wrote a wrong value into a
// row such a WHERE skipped when the transaction itself had written the row; 1.5.6 does not.)
// A REPLACE of a row by the same values counts 2, where MariaDB counts 1.

// upsert is how such a statement's count is made MySQL's.
type upsert struct {
	table     string // as DuckDB names it
	replace   bool
	unchanged bool // DuckDB's count leaves out the rows left as they were (the WHERE)
	foundRows bool
	proposed  int64 // the rows the statement proposes (its VALUES lists); -1 when not known
}

// mysqlUpsert is q (a MySQL client's, as compatRequest wrote it) as it runs when it is an
// upsert or a REPLACE (u non-nil).
func mysqlUpsert(client, q *query.Request) (*query.Request, *upsert) {
	if !isMySQL(client) || !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "insert", "replace") {
		return q, nil
	}
	replace := sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "replace")
	if !replace && !strings.Contains(q.SQL, "ON CONFLICT DO UPDATE SET") {
		return q, nil
	}
	toks := sqltok.SignificantTokens(client.SQL, sqltok.MySQL)
	db, table, ok := insertTarget(toks)
	if !ok {
		return q, nil
	}
	u := &upsert{table: tableRef(db, table), replace: replace, foundRows: client.FoundRows, proposed: proposedRows(toks)}
	if !replace {
		where, ok := unchangedWhere(q.SQL)
		if !ok {
			return q, nil
		}
		c := *q
		c.SQL = strings.TrimRight(strings.TrimSpace(q.SQL), ";") + where
		q, u.unchanged = &c, true
	}
	return q, u
}

// proposedRows counts the row lists of an INSERT's VALUES (or its one SET row); -1 for a
// SELECT.
func proposedRows(toks []sqltok.Token) int64 {
	for i, t := range toks {
		if t.IsWord("set") {
			return 1
		}
		if !t.IsWord("values", "value") || i+1 >= len(toks) || toks[i+1].Text != "(" {
			continue
		}
		var n int64
		depth := 0
		for _, t := range toks[i+1:] {
			switch {
			case t.Text == "(":
				if depth == 0 {
					n++
				}
				depth++
			case t.Text == ")":
				depth--
			case depth == 0 && t.Text != ",":
				return n // ON DUPLICATE KEY UPDATE, AS alias, the end
			}
		}
		return n
	}
	return -1
}

// unchangedWhere is the WHERE for the DO UPDATE of sql (DuckDB's, from ON CONFLICT DO UPDATE
// SET on): a row is updated when one of the columns set would change.
func unchangedWhere(sqlText string) (string, bool) {
	at := strings.Index(sqlText, "ON CONFLICT DO UPDATE SET")
	toks := sqltok.SignificantTokens(sqlText[at+len("ON CONFLICT DO UPDATE SET"):], sqltok.Postgres)
	var conds []string
	for len(toks) > 0 {
		// col = expr, up to a top-level comma.
		if len(toks) < 3 || (toks[0].Kind != sqltok.Word && toks[0].Kind != sqltok.QuotedIdent) {
			return "", false
		}
		col, eq := toks[0], 1
		if toks[1].Text == "." && len(toks) > 3 { // t.col
			col, eq = toks[2], 3
		}
		if toks[eq].Text != "=" {
			return "", false
		}
		end, depth := eq+1, 0
		for ; end < len(toks); end++ {
			switch {
			case toks[end].Text == "(":
				depth++
			case toks[end].Text == ")":
				depth--
			case depth == 0 && (toks[end].Text == ";" || toks[end].IsWord("where", "returning")):
				return "", false
			}
			if depth == 0 && toks[end].Text == "," {
				break
			}
		}
		if end == eq+1 {
			return "", false
		}
		last := toks[end-1]
		expr := sqlText[at+len("ON CONFLICT DO UPDATE SET"):][toks[eq+1].Pos : last.Pos+len(last.Text)]
		conds = append(conds, col.Text+" IS DISTINCT FROM ("+expr+")")
		toks = toks[min(end+1, len(toks)):]
	}
	if len(conds) == 0 {
		return "", false
	}
	return " WHERE " + strings.Join(conds, " OR "), true
}

// count runs the statement (exec, whose rows are a command tag by the end) between two counts
// of the table, in a transaction of its own unless inTx, and answers with MySQL's count.
func (u *upsert) count(ctx context.Context, conn *sql.Conn, inTx bool, exec func() (query.Rows, error)) (rows query.Rows, err error) {
	if !inTx {
		if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return nil, wrapErr(err)
		}
		defer func() {
			end := "COMMIT"
			if err != nil {
				end = "ROLLBACK"
			}
			if _, cerr := conn.ExecContext(context.WithoutCancel(ctx), end); cerr != nil && err == nil {
				rows, err = nil, wrapErr(cerr)
			}
		}()
	}
	before, err := u.rows(ctx, conn)
	if err != nil {
		return nil, err
	}
	rows, err = exec()
	if err != nil {
		return nil, err
	}
	tag, ok := rows.(engine.TagRows)
	if !ok {
		_ = rows.Close()
		return nil, errors.New("duckengine: an upsert returned rows")
	}
	after, err := u.rows(ctx, conn)
	if err != nil {
		return nil, err
	}
	// DuckDB's count: the rows inserted and those updated (changed) or replaced.
	cut := strings.LastIndexByte(string(tag), ' ')
	counted, perr := strconv.ParseInt(string(tag)[cut+1:], 10, 64)
	if perr != nil {
		return tag, nil
	}
	inserted := after - before
	changed := counted - inserted
	n := inserted + 2*changed
	if u.foundRows && u.unchanged && u.proposed >= 0 {
		n += max(u.proposed-inserted-changed, 0) // found, left as they were
	}
	return engine.TagRows(string(tag)[:cut+1] + strconv.FormatInt(n, 10)), nil
}

func (u *upsert) rows(ctx context.Context, conn *sql.Conn) (int64, error) {
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+u.table).Scan(&n); err != nil {
		return 0, wrapErr(err)
	}
	return n, nil
}

package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
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
// upsert or a REPLACE (u non-nil), its conflict target named (conflictTarget).
func mysqlUpsert(ctx context.Context, conn *sql.Conn, client, q *query.Request) (*query.Request, *upsert) {
	q, u := mysqlUpsertCount(client, q)
	if u == nil {
		return q, nil
	}
	return conflictTarget(ctx, conn, client, q, u), u
}

// mysqlUpsertCount is q as it runs when it is an upsert or a REPLACE (u non-nil), counted as
// MySQL counts it.
func mysqlUpsertCount(client, q *query.Request) (*query.Request, *upsert) {
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
// SET on): a row is updated when one of the columns set would change. A final ; is the end
// (Sequelize ends its statements with one).
func unchangedWhere(sqlText string) (string, bool) {
	sqlText = strings.TrimRight(strings.TrimSpace(sqlText), ";")
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
func (u *upsert) count(ctx context.Context, conn *sql.Conn, inTx bool, exec func() (query.Rows, error)) (query.Rows, error) {
	return ownTransaction(ctx, conn, inTx, func() (query.Rows, error) { return u.counted(ctx, conn, exec) })
}

// counted runs exec between the two counts.
func (u *upsert) counted(ctx context.Context, conn *sql.Conn, exec func() (query.Rows, error)) (query.Rows, error) {
	before, err := u.rows(ctx, conn)
	if err != nil {
		return nil, err
	}
	rows, err := exec()
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

// A table with more than one key (an AUTO_INCREMENT primary key and a UNIQUE name) needs the
// key an upsert conflicts on named in DuckDB ("Conflict target has to be provided"), where
// MySQL updates or replaces the row whichever key the new one collides with. conflictTarget
// names the key whose columns the statement gives, the primary key first: the key a row the
// application writes again collides with. A REPLACE becomes an upsert on that key (DuckDB's
// INSERT OR REPLACE takes no target) that sets the columns to the new row's.
// With no such key, or one key only, the statement stays as it was.
func conflictTarget(ctx context.Context, conn *sql.Conn, client, q *query.Request, u *upsert) *query.Request {
	toks := sqltok.SignificantTokens(client.SQL, sqltok.MySQL)
	db, table, _ := insertTarget(toks)
	given := insertColumns(toks)
	if given == nil {
		given = tableColumns(ctx, conn, db, table)
	}
	key, keyed := givenKey(ctx, conn, db, table, given)
	if key == nil {
		return q
	}
	quoted := make([]string, len(key))
	for i, k := range key {
		quoted[i] = quoteIdent(k)
	}
	target := "ON CONFLICT (" + strings.Join(quoted, ", ") + ")"
	c := *q
	if !u.replace {
		c.SQL = strings.Replace(q.SQL, "ON CONFLICT DO UPDATE SET", target+" DO UPDATE SET", 1)
		return &c
	}
	// The row takes the new one's values, defaults for the columns not given, as MySQL's
	// REPLACE deletes it and inserts the new one; but for the target's columns (the same) and
	// the primary key's, which keeps the row's id where MySQL's new row may take a new one.
	var sets []string
	for _, col := range tableColumns(ctx, conn, db, table) {
		if !slices.ContainsFunc(keyed, func(k string) bool { return strings.EqualFold(k, col) }) {
			sets = append(sets, quoteIdent(col)+" = excluded."+quoteIdent(col))
		}
	}
	action := " DO NOTHING"
	if len(sets) > 0 {
		action = " DO UPDATE SET " + strings.Join(sets, ", ")
	}
	c.SQL = strings.Replace(strings.TrimRight(strings.TrimSpace(q.SQL), ";"), "INSERT OR REPLACE INTO", "INSERT INTO", 1) + " " + target + action
	return &c
}

// insertColumns are the columns an INSERT's (or REPLACE's) column list names, as written
// (unquoted); nil when it has none.
func insertColumns(toks []sqltok.Token) []string {
	i := afterInsertModifiers(toks) + 1 // after the table
	if i+1 < len(toks) && toks[i].Text == "." {
		i += 2
	}
	if i < len(toks) && toks[i].IsWord("set") { // INSERT ... SET a = x, b = y (mysqlinsertset.go)
		toks = sqltok.SignificantTokens(insertSet(joinTokens(toks)), sqltok.MySQL)
	}
	if i >= len(toks) || toks[i].Text != "(" {
		return nil
	}
	var cols []string
	for i++; i < len(toks) && toks[i].Text != ")"; i++ {
		if toks[i].Text != "," {
			cols = append(cols, identText(toks[i]))
		}
	}
	return cols
}

// tableColumns are the columns of table db.table (db "": the current database's).
func tableColumns(ctx context.Context, conn *sql.Conn, db, table string) []string {
	return queryNames(ctx, conn, "SELECT column_name FROM duckdb_columns() WHERE "+inSchema("database_name", "schema_name", db)+
		" AND lower(table_name) = lower(?) ORDER BY column_index", table)
}

// givenKey is the first key of table db.table, its primary key first, whose columns are all
// among given, and keyed, its columns and the primary key's (or first key's); nil when the
// table has fewer than two keys or none of them is given.
func givenKey(ctx context.Context, conn *sql.Conn, db, table string, given []string) (key, keyed []string) {
	keys := keyedColumns(ctx, conn, db, table)
	if len(keys) < 2 {
		return nil, nil
	}
	isGiven := func(c string) bool {
		return slices.ContainsFunc(given, func(g string) bool { return strings.EqualFold(g, c) })
	}
	for _, k := range keys {
		if !slices.ContainsFunc(k, func(c string) bool { return !isGiven(c) }) {
			return k, slices.Concat(k, keys[0])
		}
	}
	return nil, nil
}

// keyedColumns are the columns of table db.table's keys: its primary key first, then its unique
// constraints and unique indexes of columns, in the order they were made (MariaDB's order of a
// duplicate's search); nil on an error.
func keyedColumns(ctx context.Context, conn *sql.Conn, db, table string) [][]string {
	rows, err := conn.QueryContext(ctx, "SELECT constraint_column_names FROM duckdb_constraints() WHERE "+
		inSchema("database_name", "schema_name", db)+" AND lower(table_name) = lower(?) AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') "+
		"ORDER BY constraint_type <> 'PRIMARY KEY', constraint_index", table)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var keys [][]string
	for rows.Next() {
		var cols []any
		if rows.Scan(&cols) != nil {
			return nil
		}
		k := make([]string, len(cols))
		for i, c := range cols {
			k[i], _ = c.(string)
		}
		keys = append(keys, k)
	}
	rows.Close()
	return append(keys, uniqueIndexKeys(ctx, conn, db, table)...)
}

// uniqueIndexKeys are the columns of table's unique indexes of columns only (an ALTER TABLE's
// ADD UNIQUE, CREATE UNIQUE INDEX: mysqladdkey.go), which a conflict also needs told apart;
// an index of an expression (the caseless lower(col) beside a key) is none.
func uniqueIndexKeys(ctx context.Context, conn *sql.Conn, db, table string) [][]string {
	rows, err := conn.QueryContext(ctx, "SELECT expressions FROM duckdb_indexes() WHERE "+inSchema("database_name", "schema_name", db)+
		" AND lower(table_name) = lower(?) AND is_unique ORDER BY index_name", table)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var keys [][]string
	for rows.Next() {
		var exprs string // DuckDB's text of the list: [email], [a, "B"], ['(lower(email))']
		if rows.Scan(&exprs) != nil {
			return nil
		}
		var k []string
		toks := sqltok.SignificantTokens(strings.TrimSuffix(strings.TrimPrefix(exprs, "["), "]"), sqltok.Postgres)
		for _, item := range sqltok.SplitAtCommas(toks) {
			if len(item) != 1 || item[0].Kind != sqltok.Word && item[0].Kind != sqltok.QuotedIdent {
				k = nil
				break
			}
			k = append(k, pgIdent(item[0]))
		}
		if k != nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// queryNames runs a query of one text column with one argument and returns its values; nil
// on an error.
func queryNames(ctx context.Context, conn *sql.Conn, sqlText string, arg string) []string {
	rows, err := conn.QueryContext(ctx, sqlText, arg)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) != nil {
			return nil
		}
		names = append(names, n)
	}
	return names
}

// ownTransaction runs work in a transaction of its own on conn, unless inTx (the client's
// transaction holds it): committed when work succeeds, rolled back when it fails.
func ownTransaction(ctx context.Context, conn *sql.Conn, inTx bool, work func() (query.Rows, error)) (rows query.Rows, err error) {
	if inTx {
		return work()
	}
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
	return work()
}

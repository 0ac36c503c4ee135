package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Column changes in migrations (Knex's alterTable) that DuckDB refuses as written:
//   - ALTER TABLE t ADD [COLUMN] c type ... NOT NULL (notNullable()): DuckDB adds no column with a
//     constraint. It is added without NOT NULL, then set NOT NULL, in one transaction: with a
//     DEFAULT the existing rows take it and the column holds; without one, a table with rows
//     refuses the NOT NULL, as PostgreSQL refuses the column.
//   - ALTER TABLE t DROP [COLUMN] [IF EXISTS] c: PostgreSQL drops the column's indexes with it.
// DuckDB alters no column of a table that has an index: the table's indexes are dropped around
// the change and created again, but for those on a dropped column.

// indexedAlter is such a change as DuckDB runs it.
type indexedAlter struct {
	stmts         []string // what DuckDB runs while the table has no index
	schema, table string   // the table's schema ("" for the current one) and name
	dropped       string   // a dropped column, whose indexes go
}

// run runs the statements, the table's indexes dropped around them.
func (a indexedAlter) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	rows, err := conn.QueryContext(ctx, `SELECT index_name, sql, list_contains(list_transform(CAST(CAST(expressions AS VARCHAR) AS VARCHAR[]),
			e -> lower(trim(e, '"'))), lower(?)) FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?) AND sql IS NOT NULL`, a.dropped, a.schema, a.table)
	if err != nil {
		return nil, wrapErr(err)
	}
	var drops, creates []string
	for rows.Next() {
		var name, create string
		var onDropped bool
		if err := rows.Scan(&name, &create, &onDropped); err != nil {
			rows.Close()
			return nil, wrapErr(err)
		}
		drops = append(drops, "DROP INDEX "+qualified(a.schema, name))
		if !onDropped {
			creates = append(creates, create)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrapErr(err)
	}
	stmts := slices.Concat(drops, a.stmts, creates)
	if a.dropped != "" {
		// DuckDB drops no column while an index dropped in the same transaction was on it:
		// the table is created again without the column.
		if stmts, err = a.rebuild(ctx, conn, creates); err != nil {
			return nil, err
		}
		if a.schema == "" { // the tables referencing it set aside around it (Django's contenttypes 0002)
			if stmts, err = withReferencingSetAside(ctx, conn, a.table, "", "", stmts); err != nil {
				return nil, err
			}
		}
	}
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// pgIndexedAlter reads sqlText as such a statement; ok is false for any other.
func pgIndexedAlter(sqlText string) (a indexedAlter, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	is := func(i int, w string) bool {
		return i < len(toks) && toks[i].Kind == sqltok.Word && strings.EqualFold(toks[i].Text, w)
	}
	at := 2
	if !is(0, "alter") || !is(1, "table") {
		return a, false
	}
	if is(at, "if") && is(at+1, "exists") {
		at += 2
	}
	if is(at, "only") {
		at++
	}
	nameFrom := at
	for at < len(toks) && !is(at, "add") && !is(at, "drop") {
		at++
	}
	if at == nameFrom || at == len(toks) {
		return a, false
	}
	head, at0 := sqlText[:toks[at].Pos], at // ALTER TABLE t, and where ADD is
	a.table = pgIdent(toks[at0-1])
	if at0-nameFrom >= 3 && toks[at0-2].Text == "." {
		a.schema = duckSchema(pgIdent(toks[at0-3]))
	}
	if is(at, "drop") {
		return a.dropColumn(sqlText, toks, at+1)
	}
	if !is(at, "add") {
		return a, false
	}
	at++
	if is(at, "column") {
		at++
	}
	if is(at, "if") && is(at+1, "not") && is(at+2, "exists") {
		at += 3
	}
	if is(at, "constraint") || is(at, "primary") || is(at, "unique") || is(at, "foreign") || is(at, "check") || at+1 >= len(toks) {
		return a, false
	}
	column := toks[at].Text
	// NOT NULL at the definition's top level (not inside a DEFAULT's or a CHECK's parentheses).
	depth, notNull := 0, -1
	for i := at + 1; i < len(toks); i++ {
		switch {
		case toks[i].Text == "(":
			depth++
		case toks[i].Text == ")":
			depth--
		case toks[i].Text == ",":
			if depth == 0 {
				return a, false // several actions: DuckDB's to run or refuse
			}
		case depth == 0 && is(i, "not") && is(i+1, "null"):
			notNull = i
		}
	}
	if notNull < 0 {
		return a, false
	}
	end := len(sqlText)
	if n := len(toks); n > 0 {
		end = toks[n-1].Pos + len(toks[n-1].Text)
	}
	add := sqlText[:toks[notNull].Pos] + sqlText[toks[notNull+1].Pos+len(toks[notNull+1].Text):end]
	a.stmts = []string{duckRelation(strings.TrimSpace(add)), duckRelation(strings.TrimSpace(head)) + " ALTER COLUMN " + column + " SET NOT NULL"}
	return a, true
}

// dropColumn reads DROP [COLUMN] [IF EXISTS] c [RESTRICT] from toks[at] on.
func (a indexedAlter) dropColumn(sqlText string, toks []sqltok.Token, at int) (indexedAlter, bool) {
	is := func(i int, w string) bool {
		return i < len(toks) && toks[i].Kind == sqltok.Word && strings.EqualFold(toks[i].Text, w)
	}
	if is(at, "column") {
		at++
	} else if is(at, "constraint") {
		return a, false
	}
	if is(at, "if") && is(at+1, "exists") {
		at += 2
	}
	if at >= len(toks) || toks[at].Kind != sqltok.Word && toks[at].Kind != sqltok.QuotedIdent {
		return a, false
	}
	a.dropped = pgIdent(toks[at])
	// CASCADE (Django writes it on every DROP COLUMN) as RESTRICT: a key or check on the
	// column is refused (rebuild), a view reading it is left, where PostgreSQL drops both.
	if rest := toks[at+1:]; len(rest) > 1 || len(rest) == 1 && !is(at+1, "restrict") && !is(at+1, "cascade") {
		return a, false // another action: DuckDB's to run or refuse
	}
	a.stmts = []string{duckRelation(sqlText[:toks[at].Pos+len(toks[at].Text)])}
	return a, true
}

// rebuild are the statements that create the table again without the dropped column, its rows
// and its other indexes (creates) kept. A key or check on the column is refused: PostgreSQL
// drops it with the column, which this does not.
func (a indexedAlter) rebuild(ctx context.Context, conn *sql.Conn, creates []string) ([]string, error) {
	var ddl string
	err := conn.QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?)`, a.schema, a.table).Scan(&ddl)
	if err == sql.ErrNoRows {
		return nil, &query.Error{Code: sqlstate.UndefinedTable, Message: `relation "` + a.table + `" does not exist`}
	} else if err != nil {
		return nil, wrapErr(err)
	}
	h, ok := readCreateTable(ddl, sqltok.Postgres)
	defs, end := definitions(h.toks, h.open)
	if !ok || end < 0 {
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "cannot read the definition of table " + a.table}
	}
	var kept []string
	found := false
	for _, d := range defs {
		if pgIdent(d[0]) == a.dropped {
			found = true
			continue
		}
		last := d[len(d)-1]
		if m := lengthCheckPattern.FindStringSubmatch(ddl[d[0].Pos : last.Pos+len(last.Text)]); m != nil {
			// a varchar(n)'s length check (pglength.go) goes with its column
			if name := sqltok.SignificantTokens(m[1], sqltok.Postgres); len(name) == 1 && pgIdent(name[0]) == a.dropped {
				continue
			}
		}
		for _, t := range d[1:] {
			if (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent) && pgIdent(t) == a.dropped {
				return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "DuckDB cannot drop column " + a.dropped +
					" of table " + a.table + ": a key or a check of the table names it"}
			}
		}
		kept = append(kept, ddl[d[0].Pos:last.Pos+len(last.Text)])
	}
	if !found {
		return a.stmts, nil // no such column: DuckDB's error, or IF EXISTS's nothing
	}
	name, copy := qualified(a.schema, a.table), quoteIdent("qf_rebuild_"+a.table)
	return append([]string{"CREATE TEMPORARY TABLE " + copy + " AS SELECT * EXCLUDE (" + quoteIdent(a.dropped) + ") FROM " + name,
		"DROP TABLE " + name, ddl[:h.toks[h.open].Pos] + "(" + strings.Join(kept, ", ") + ")",
		"INSERT INTO " + name + " SELECT * FROM " + copy, "DROP TABLE temp.main." + copy}, creates...), nil
}

package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// DuckDB adds no CHECK constraint to a table and drops none ("No support for that ALTER TABLE
// option"); PostgreSQL does both in place (Django's AddConstraint(CheckConstraint) and
// RemoveConstraint, Rails' add_check_constraint). Here ALTER TABLE t ADD [CONSTRAINT c] CHECK
// (expr) creates the table again with the check (its family too, when keys reference it:
// pgrebuild.go), its rows put back through it: a row it refuses fails the statement with 23514
// and nothing changes, as PostgreSQL's validation. Later writes are checked by DuckDB (23514).
// The name given is kept in the declared catalog (kind 'c', by the check's columns), so that
// pg_constraint lists it and DROP CONSTRAINT finds it; DROP CONSTRAINT of a check creates the
// table again without it.

// addCheck is ALTER TABLE ... ADD [CONSTRAINT name] CHECK (expr).
type addCheck struct {
	schema, table, name, expr string
}

// readAddCheck reads sqlText as such a statement; ok is false for any other (NOT VALID, NO
// INHERIT: DuckDB's to refuse).
func readAddCheck(sqlText string) (a addCheck, ok bool) {
	if !containsFold(sqlText, "check") {
		return a, false
	}
	r, toks, ok := alterTableAdd(sqlText, &a.schema, &a.table)
	if !ok {
		return a, false
	}
	if r.Word("constraint") {
		if a.name = tokenName(r.Name()); a.name == "" {
			return a, false
		}
	}
	if !r.Word("check") || r.Peek().Text != "(" {
		return a, false
	}
	open := slices.IndexFunc(toks, func(t sqltok.Token) bool { return t.Pos == r.Peek().Pos })
	if open < 0 || toks[len(toks)-1].Text != ")" || matchingParen(toks, open) != len(toks)-1 || open+1 >= len(toks)-1 {
		return a, false
	}
	a.expr = strings.TrimSpace(sqlText[toks[open+1].Pos:toks[len(toks)-1].Pos])
	return a, true
}

// alterTableAdd reads sqlText as ALTER TABLE [schema.]table ADD ...: the walker after ADD, the
// significant tokens (a final ";" left off), and the table's DuckDB schema ("": the current
// one) and name written to schema and table; ok is false for any other statement.
func alterTableAdd(sqlText string, schema, table *string) (r *sqltok.Walker, toks []sqltok.Token, ok bool) {
	toks = sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	r = sqltok.NewWalker(toks)
	name := alterTableName(r)
	if name == nil || !r.Word("add") {
		return nil, nil, false
	}
	*table = name[len(name)-1]
	if len(name) >= 2 {
		*schema = duckSchema(name[len(name)-2])
	}
	return r, toks, true
}

// matchingParen is the index of the ")" closing the "(" at toks[open], or -1.
func matchingParen(toks []sqltok.Token, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch toks[i].Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

func (a addCheck) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	if a.name != "" {
		if named, err := (dropForeignKey{schema: a.schema, table: a.table, name: a.name}).named(ctx, conn); err != nil {
			return nil, err
		} else if named {
			return nil, &query.Error{Code: sqlstate.DuplicateObject, Message: `constraint "` + a.name + `" for relation "` + a.table + `" already exists`}
		}
	}
	stmts, err := tableRebuiltWith(ctx, conn, a.schema, a.table, func(ddl string) string {
		end := strings.LastIndex(ddl, ")")
		return ddl[:end] + ", CHECK (" + a.expr + ")" + ddl[end:]
	})
	if err != nil {
		return nil, err
	}
	if a.name != "" { // the new check is the table's last
		stmts = append(stmts, "INSERT INTO "+declaredSchema+".constraints SELECT "+schemaExpr(a.schema)+", lower("+quoteString(a.table)+
			"), 'c', list_transform(constraint_column_names, x -> lower(x)), "+quoteString(a.name)+", NULL, NULL, NULL FROM duckdb_constraints() "+
			"WHERE database_name = current_database() AND schema_name = "+schemaExpr(a.schema)+" AND lower(table_name) = lower("+quoteString(a.table)+
			") AND constraint_type = 'CHECK' ORDER BY constraint_index DESC LIMIT 1")
	}
	name := a.pgName(ctx, conn) // before: a failed statement ends a client's transaction
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		var qe *query.Error
		if errors.As(err, &qe) && qe.Code == sqlstate.CheckViolation {
			// PostgreSQL's validation of the rows there: no row named
			return nil, checkFieldsError(`check constraint "`+name+`" of relation "`+a.table+`" is violated by some row`, a.schema, a.table, name)
		}
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// pgName is the check's name: the one given, else PostgreSQL's default, the table's name and
// the first of its columns the expression names, then "check" (t_n_check; t_check when none).
func (a addCheck) pgName(ctx context.Context, conn *sql.Conn) string {
	if a.name != "" {
		return a.name
	}
	rows, err := conn.QueryContext(ctx, `SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?)`, a.schema, a.table)
	var cols []string
	if err == nil {
		for rows.Next() {
			var c string
			if rows.Scan(&c) == nil {
				cols = append(cols, c)
			}
		}
		rows.Close()
	}
	for _, t := range sqltok.SignificantTokens(a.expr, sqltok.Postgres) {
		if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
			continue
		}
		name := pgIdent(t)
		if slices.ContainsFunc(cols, func(c string) bool { return c == name }) {
			return a.table + "_" + name + "_check"
		}
	}
	return a.table + "_check"
}

// tableRebuiltWith is rebuiltWith (pgdeferred.go) of a table that exists (42P01 when not), the
// text change gives without its final ";".
func tableRebuiltWith(ctx context.Context, conn *sql.Conn, schema, table string, change func(ddl string) string) ([]string, error) {
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?)`, schema, table).Scan(&n); err != nil {
		return nil, wrapErr(err)
	} else if n == 0 {
		return nil, &query.Error{Code: sqlstate.UndefinedTable, Message: `relation "` + table + `" does not exist`}
	}
	return rebuiltWith(ctx, conn, schema, table, func(ddl string) string { return change(strings.TrimSuffix(strings.TrimSpace(ddl), ";")) })
}

// dropCheck creates d's table again without its check constraint named as d's; false when it
// has none.
func (d dropForeignKey) dropCheck(ctx context.Context, conn *sql.Conn, inTx bool) (bool, error) {
	var text string
	err := conn.QueryRowContext(ctx, `SELECT 'CHECK(' || c.conbin || ')' FROM `+compatPrefix+`qf_pg_constraint c JOIN duckdb_tables() t ON t.table_oid = c.conrelid
		WHERE c.contype = 'c' AND c.conname = ? AND t.database_name = current_database()
		AND t.schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(t.table_name) = lower(?)`, d.name, d.schema, d.table).Scan(&text)
	if err == sql.ErrNoRows {
		return false, nil
	} else if err != nil {
		return false, wrapErr(err)
	}
	removed := false
	stmts, err := tableRebuiltWith(ctx, conn, d.schema, d.table, func(ddl string) string {
		without := strings.Replace(ddl, ", "+text, "", 1)
		removed = without != ddl
		return without
	})
	if err != nil {
		return false, err
	}
	if !removed {
		return false, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "cannot drop check constraint " + d.name + " of table " + d.table +
			": its text is not found in DuckDB's definition of the table"}
	}
	stmts = append(stmts, "DELETE FROM "+declaredSchema+".constraints WHERE schema_name = "+schemaExpr(d.schema)+
		" AND table_name = lower("+quoteString(d.table)+") AND kind = 'c' AND name = "+quoteString(d.name))
	return true, runAll(ctx, conn, stmts, inTx)
}

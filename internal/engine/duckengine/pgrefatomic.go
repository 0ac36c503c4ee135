package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A foreign key's ON DELETE / ON UPDATE action and the client's statement in one transaction.
// DuckDB 1.5 refuses, in one transaction, to delete (or change the key of) a referenced row
// after the rows that referenced it ("still referenced by a foreign key": its key index drops
// a deleted entry only at commit). It does not refuse once the referencing table is created
// again in the transaction, the new table holding only what the action left. So the
// referencing tables (and theirs, transitively) are set aside around the statement:
//
//  1. each is copied to a temporary table, and the actions are applied to the copies (rows
//     deleted, key columns set NULL, to their default or to the new key);
//  2. they are dropped, children first, and the client's statement runs;
//  3. they are created again, parents first, from DuckDB's text of them, with the copies'
//     rows and their indexes.
//
// All of it is one transaction: if any step fails (a key without an action still references
// a row: PostgreSQL's 23503 too), nothing is changed. The cost is a copy of the referencing
// tables' rows, for each such statement, unless DuckDB can rename the referencing tables:
// then they are hidden from the statement instead (pgrefhide.go).

// pgRefTokens are the significant tokens of sqlText, a PostgreSQL client's statement starting
// with verb (delete, update), without a trailing ";"; nil for another statement, or one with a
// top-level word of refused (USING, FROM, RETURNING) or a second statement.
func pgRefTokens(client *query.Request, sqlText, verb string, refused ...string) []sqltok.Token {
	if client.Protocol != query.ProtocolPostgres || !strings.EqualFold(sqltok.FirstWord(client.Analysis().Tokens), verb) {
		return nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if sqltok.TopLevel(toks, func(t sqltok.Token) bool {
		if t.Text == ";" {
			return true
		}
		for _, w := range refused {
			if isWord(t, w) {
				return true
			}
		}
		return false
	}) >= 0 {
		return nil
	}
	return toks
}

// withReferencingRebuilt runs, in one transaction (the client's when inTx): before (with args where a step says so),
// the copies of the tables referencing schema.table, onCopies' steps (copyOf names the copy of
// a referencing table), the statement (again) with those tables dropped, then the tables
// created again from the copies.
func withReferencingRebuilt(ctx context.Context, conn *sql.Conn, inTx bool, schema, table string, args []any, before []step,
	onCopies func(copyOf func(schema, table string) string) []step, again func() (query.Rows, error)) (query.Rows, error) {
	return withReferencingAside(ctx, conn, inTx, schema, table, args, before, onCopies, false, again)
}

// withReferencingAside is withReferencingRebuilt with the referencing tables hidden where
// DuckDB can rename them (pgrefhide.go); late: onCopies' steps read what the statement wrote,
// so with the tables hidden they run after it.
func withReferencingAside(ctx context.Context, conn *sql.Conn, inTx bool, schema, table string, args []any, before []step,
	onCopies func(copyOf func(schema, table string) string) []step, late bool, again func() (query.Rows, error)) (query.Rows, error) {
	family, _, err := tableFamily(ctx, conn, schema, table)
	if err != nil {
		return nil, err
	}
	var children []familyTable
	for _, t := range family {
		if !strings.EqualFold(t.name, table) {
			children = append(children, t)
		}
	}
	if hideable(children) {
		return asideTransaction(ctx, conn, inTx, func() (query.Rows, error) {
			return withReferencingHidden(ctx, conn, schema, table, children, args, before, onCopies, late, again)
		})
	}
	copyOf := func(schema, table string) string {
		for i, t := range children {
			if strings.EqualFold(t.name, table) && strings.EqualFold(t.schema, schema) {
				return fmt.Sprintf("temp.main.qf_referencing_%d", i)
			}
		}
		return qualified(schema, table) // not reached: a key's table is in its referenced table's family
	}
	steps := before
	var drops, after []step
	for i, t := range children {
		cp := fmt.Sprintf("qf_referencing_%d", i)
		steps = append(steps, step{"CREATE OR REPLACE TEMPORARY TABLE " + cp + " AS SELECT * FROM " + qualified(t.schema, t.name), false})
		drops = append([]step{{"DROP TABLE " + qualified(t.schema, t.name), false}}, drops...) // children first
		after = append(after, step{t.ddl, false}, step{"INSERT INTO " + qualified(t.schema, t.name) + " SELECT * FROM temp.main." + cp, false},
			step{"DROP TABLE temp.main." + cp, false})
	}
	for _, t := range children {
		for _, create := range t.indexes {
			after = append(after, step{create, false})
		}
		comments, err := tableComments(ctx, conn, t)
		if err != nil {
			return nil, err
		}
		after = append(after, comments...)
	}
	checks, err := orphanChecks(ctx, conn, schema, table)
	if err != nil {
		return nil, err
	}
	steps = append(append(steps, onCopies(copyOf)...), drops...)
	aside := func() (query.Rows, error) {
		if err := execSteps(ctx, conn, steps, args); err != nil {
			return nil, err
		}
		rows, err := again()
		if err != nil {
			return nil, err
		}
		if err := execSteps(ctx, conn, after, args); err != nil {
			return nil, err
		}
		return rows, countOrphans(ctx, conn, checks)
	}
	return asideTransaction(ctx, conn, inTx, aside)
}

// asideTransaction runs aside in a transaction of its own, committed if it succeeds, or, when inTx,
// in the client's, which a failure leaves for the client to roll back.
func asideTransaction(ctx context.Context, conn *sql.Conn, inTx bool, aside func() (query.Rows, error)) (query.Rows, error) {
	if inTx {
		return aside()
	}
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, wrapErr(err)
	}
	rows, err := aside()
	if err == nil {
		_, err = conn.ExecContext(ctx, "COMMIT")
		err = wrapErr(err)
	}
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, err
	}
	return rows, nil
}

// execSteps runs steps on conn, those that hold the statement's parameters with args.
func execSteps(ctx context.Context, conn *sql.Conn, steps []step, args []any) error {
	for _, s := range steps {
		var a []any
		if s.args {
			a = args
		}
		if _, err := conn.ExecContext(ctx, s.sql, a...); err != nil {
			return wrapErr(err)
		}
	}
	return nil
}

// actionSet is the SET list of a SET NULL or SET DEFAULT action (a.action 'n' or 'd') on a's
// key columns, a copy of its table: a column's default is DuckDB's expression of it.
func actionSet(ctx context.Context, conn *sql.Conn, a refAction) (string, error) {
	var sets []string
	for _, c := range a.columns {
		value := "NULL"
		if a.action == 'd' {
			var def sql.NullString
			err := conn.QueryRowContext(ctx, `SELECT any_value(column_default) FROM duckdb_columns() WHERE database_name = current_database()
				AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?) AND lower(column_name) = lower(?)`,
				a.schema, a.table, c).Scan(&def)
			if err != nil {
				return "", wrapErr(err)
			}
			if def.Valid {
				value = def.String
			}
		}
		sets = append(sets, quoteIdent(c)+" = "+value)
	}
	return strings.Join(sets, ", "), nil
}

// isForeignKeyViolation reports whether err is DuckDB's foreign key violation.
func isForeignKeyViolation(err error) bool {
	qe, ok := err.(*query.Error)
	return ok && qe.Code == sqlstate.ForeignKeyViolation
}

// errOrphans is the refusal of a statement that left rows referencing none of the referenced
// table's: a key without an action (NO ACTION, RESTRICT) references a row it deleted or
// changed, which PostgreSQL refuses too (the caller answers DuckDB's own refusal).
var errOrphans = &query.Error{Code: sqlstate.ForeignKeyViolation, Message: "a foreign key without an action references a row the statement deletes or changes"}

// orphanChecks are the queries that count, for each foreign key referencing schema.table,
// the rows referencing none of its rows. DuckDB checks a key created again against the
// referenced table's key index, which keeps a row deleted (or a key changed) in the
// transaction until it commits: the rows put back are checked against the table's rows.
func orphanChecks(ctx context.Context, conn *sql.Conn, schema, table string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT k.schema_name, k.table_name, CAST(k.constraint_column_names AS VARCHAR[]), CAST(k.referenced_column_names AS VARCHAR[])
		FROM duckdb_constraints() k WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database()
		AND k.schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(k.referenced_table) = lower(?)`, schema, table)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var checks []string
	for rows.Next() {
		var keySchema, keyTable string
		var cols, refs []any
		if err := rows.Scan(&keySchema, &keyTable, &cols, &refs); err != nil {
			return nil, wrapErr(err)
		}
		var set, match []string
		for i, c := range cols {
			col := "qf_key." + quoteIdent(fmt.Sprint(c))
			set = append(set, col+" IS NOT NULL")
			match = append(match, "qf_referenced."+quoteIdent(fmt.Sprint(refs[i]))+" = "+col)
		}
		checks = append(checks, "SELECT count(*) FROM "+qualified(keySchema, keyTable)+" AS qf_key WHERE "+strings.Join(set, " AND ")+
			" AND NOT EXISTS (SELECT 1 FROM "+qualified(schema, table)+" AS qf_referenced WHERE "+strings.Join(match, " AND ")+")")
	}
	return checks, wrapErr(rows.Err())
}

// tableComments are the COMMENT ON statements that give t (created again) and its columns
// the comments they have: DuckDB's CREATE TABLE text holds none.
func tableComments(ctx context.Context, conn *sql.Conn, t familyTable) ([]step, error) {
	rows, err := conn.QueryContext(ctx, `SELECT NULL, comment FROM duckdb_tables() WHERE database_name = current_database()
			AND schema_name = ? AND table_name = ? AND comment <> ''
		UNION ALL SELECT column_name, comment FROM duckdb_columns() WHERE database_name = current_database()
			AND schema_name = ? AND table_name = ? AND comment <> ''`, t.schema, t.name, t.schema, t.name)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var steps []step
	for rows.Next() {
		var column sql.NullString
		var comment string
		if err := rows.Scan(&column, &comment); err != nil {
			return nil, wrapErr(err)
		}
		on := "TABLE " + qualified(t.schema, t.name)
		if column.Valid {
			on = "COLUMN " + qualified(t.schema, t.name) + "." + quoteIdent(column.String)
		}
		steps = append(steps, step{"COMMENT ON " + on + " IS " + quoteString(comment), false})
	}
	return steps, wrapErr(rows.Err())
}

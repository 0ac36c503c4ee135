package duckengine

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A PostgreSQL client's NULL written into a NOT NULL column was DuckDB's "Constraint Error:
// NOT NULL constraint failed: t.n"; PostgreSQL's is `null value in column "n" of relation "t"
// violates not-null constraint`, the table's and column's names in the error's fields (pgx's
// ColumnName, psycopg's diag.column_name) and the row in its DETAIL, `Failing row contains
// (3, c, null).`, found again as a violated CHECK's is (pgcheckrow.go).

// notNullFailedPrefix starts the rest of DuckDB's message: the table, a dot, the column.
const notNullFailedPrefix = "NOT NULL constraint failed: "

// notNullViolation is qe (a 23502 of DuckDB's) as PostgreSQL gives it; err when its message is
// not DuckDB's form.
func (e *Engine) notNullViolation(ctx context.Context, client *query.Request, err error, qe *query.Error) error {
	_, rest, ok := strings.Cut(qe.Message, notNullFailedPrefix)
	dot := strings.LastIndexByte(rest, '.')
	if !ok || dot <= 0 || dot == len(rest)-1 {
		return err
	}
	table, column := rest[:dot], rest[dot+1:]
	msg := `null value in column "` + column + `" of relation "` + table + `" violates not-null constraint`
	pe := &pgconn.PgError{Severity: "ERROR", Code: sqlstate.NotNullViolation, Message: msg, SchemaName: "public", TableName: table, ColumnName: column}
	if conn, cerr := e.conn(context.WithoutCancel(ctx)); cerr == nil {
		pe.Detail = failingRow(ctx, conn, client, "main", table, "CHECK(("+quoteIdent(column)+" IS NOT NULL))")
		release(conn, true)
	}
	return &pgFieldsError{qe: &query.Error{Code: sqlstate.NotNullViolation, Message: msg}, pg: pe}
}

// A duplicate key was DuckDB's `Constraint Error: Duplicate key "id: 1" violates primary key
// constraint.`; PostgreSQL's is `duplicate key value violates unique constraint "t_pkey"` with
// DETAIL `Key (id)=(1) already exists.` and the schema's, table's and constraint's names in its
// fields. DuckDB names neither the table nor the constraint: the table is the one the client's
// INSERT or UPDATE writes, the constraint its primary key or UNIQUE of the key's columns,
// named as pg_constraint names it (qf_key_constraints). A key that cannot be told so (a
// unique index, an upsert's other table) keeps DuckDB's message, with its 23505.

// duplicateKeyPrefix starts DuckDB's message of a duplicate key: the columns and values follow.
const duplicateKeyPrefix = `Duplicate key "`

// uniqueViolation is qe (a 23505 of DuckDB's) as PostgreSQL gives it; err when it cannot be told.
func (e *Engine) uniqueViolation(ctx context.Context, client *query.Request, err error, qe *query.Error) error {
	_, rest, ok := strings.Cut(qe.Message, duplicateKeyPrefix)
	key, kind, ok2 := strings.Cut(rest, `" violates `)
	if !ok || !ok2 {
		return err
	}
	constraintType := "UNIQUE"
	if strings.HasPrefix(kind, "primary key") {
		constraintType = "PRIMARY KEY"
	}
	toks := sqltok.SignificantTokens(client.SQL, sqltok.Postgres)
	if len(toks) == 0 || !isWord(toks[0], "insert") && !isWord(toks[0], "update") {
		return err
	}
	name, _, ok := pgWriteTarget(toks)
	if !ok {
		return err
	}
	table := name[len(name)-1]
	conn, cerr := e.conn(context.WithoutCancel(ctx))
	if cerr != nil {
		return err
	}
	defer release(conn, true)
	rows, qerr := conn.QueryContext(ctx, `SELECT pg_name, schema_name, array_to_string(constraint_column_names, chr(1)) FROM `+compatPrefix+
		`qf_key_constraints() WHERE table_name = ? AND constraint_type = ? ORDER BY schema_name <> 'main'`, table, constraintType)
	if qerr != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pgName, schema, cols string
		if rows.Scan(&pgName, &schema, &cols) != nil {
			return err
		}
		values, ok := keyValues(key, strings.Split(cols, "\x01"))
		if !ok {
			continue
		}
		if schema == "main" {
			schema = "public"
		}
		msg := `duplicate key value violates unique constraint "` + pgName + `"`
		pe := &pgconn.PgError{Severity: "ERROR", Code: sqlstate.UniqueViolation, Message: msg, SchemaName: schema, TableName: table, ConstraintName: pgName,
			Detail: "Key (" + strings.Join(strings.Split(cols, "\x01"), ", ") + ")=(" + strings.Join(values, ", ") + ") already exists."}
		return &pgFieldsError{qe: &query.Error{Code: sqlstate.UniqueViolation, Message: msg}, pg: pe}
	}
	return err
}

// keyValues reads DuckDB's "a: 1, b: x" as the values of cols, in order; ok is false when key
// names other columns.
func keyValues(key string, cols []string) ([]string, bool) {
	values := make([]string, len(cols))
	for i, c := range cols {
		rest, ok := strings.CutPrefix(key, c+": ")
		if !ok {
			return nil, false
		}
		if i == len(cols)-1 {
			values[i] = rest
			return values, true
		}
		end := strings.Index(rest, ", "+cols[i+1]+": ")
		if end < 0 {
			return nil, false
		}
		values[i], key = rest[:end], rest[end+2:]
	}
	return nil, false
}

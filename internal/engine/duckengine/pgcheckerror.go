package duckengine

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// checkFailedPrefix and checkFailedExpr frame DuckDB's message of a violated CHECK constraint:
// "Constraint Error: CHECK constraint failed on table t with expression CHECK((a > 0))".
const (
	checkFailedPrefix = "CHECK constraint failed on table "
	checkFailedExpr   = " with expression "
)

// pgFieldsError is an error a PostgreSQL client reads with PostgreSQL's fields (pgwire sends a
// *pgconn.PgError's whole), and every other client as its *query.Error.
type pgFieldsError struct {
	qe *query.Error
	pg *pgconn.PgError
}

func (e *pgFieldsError) Error() string   { return e.qe.Error() }
func (e *pgFieldsError) Unwrap() []error { return []error{e.qe, e.pg} }

// checkViolation gives a PostgreSQL client's violated CHECK constraint PostgreSQL's message,
// `new row for relation "t" violates check constraint "t_a_check"`, with the constraint's,
// table's and schema's names in the error's fields (pgx's ConstraintName, JDBC's
// ServerErrorMessage.getConstraint, psycopg's diag.constraint_name): the constraint is the
// table's CHECK whose text DuckDB's message holds, named as pg_constraint names it. DuckDB
// says no row: the DETAIL's row is found again (pgcheckrow.go). Any other error, or one it
// cannot name (a table made in the client's open transaction is not seen from another
// connection), is err as it is.
func (e *Engine) checkViolation(ctx context.Context, client *query.Request, err error) error {
	var qe *query.Error
	if client.Protocol == query.ProtocolPostgres && errors.As(err, &qe) && qe.Code == sqlstate.NotNullViolation {
		return e.notNullViolation(ctx, client, err, qe) // pgnotnull.go
	}
	if client.Protocol == query.ProtocolPostgres && errors.As(err, &qe) && qe.Code == sqlstate.UniqueViolation {
		return e.uniqueViolation(ctx, client, err, qe) // pgnotnull.go
	}
	if client.Protocol != query.ProtocolPostgres || !errors.As(err, &qe) || qe.Code != sqlstate.CheckViolation {
		return err
	}
	_, rest, ok := strings.Cut(qe.Message, checkFailedPrefix)
	if !ok {
		return err
	}
	table, expr, ok := strings.Cut(rest, checkFailedExpr)
	if !ok || table == "" || expr == "" {
		return err
	}
	if le, ok := lengthViolation(expr); ok { // pglength.go
		return le
	}
	conn, cerr := e.conn(context.WithoutCancel(ctx))
	if cerr != nil {
		return err
	}
	defer release(conn, true)
	var schema, name string
	// (not k: the macro's own subquery names its rows k)
	row := conn.QueryRowContext(ctx, `SELECT vc.schema_name, `+compatPrefix+`qf_pg_constraint_name(vc.database_name, vc.schema_name, vc.constraint_name)
		FROM duckdb_constraints() vc WHERE vc.database_name = current_database() AND vc.constraint_type = 'CHECK'
		AND vc.table_name = $1 AND vc.constraint_text = $2 ORDER BY vc.schema_name <> 'main' LIMIT 1`, table, expr)
	if row.Scan(&schema, &name) != nil || name == "" {
		return err
	}
	e2 := checkFieldsError(`new row for relation "`+table+`" violates check constraint "`+name+`"`, schema, table, name)
	e2.(*pgFieldsError).pg.Detail = failingRow(ctx, conn, client, schema, table, expr) // pgcheckrow.go
	return e2
}

// checkFieldsError is a 23514 of msg with the check's, table's and schema's (DuckDB's: main, ""
// for the current one, are public) names in its fields.
func checkFieldsError(msg, schema, table, name string) error {
	if schema == "main" || schema == "" {
		schema = "public"
	}
	return &pgFieldsError{
		qe: &query.Error{Code: sqlstate.CheckViolation, Message: msg},
		pg: &pgconn.PgError{Severity: "ERROR", Code: sqlstate.CheckViolation, Message: msg, SchemaName: schema, TableName: table, ConstraintName: name},
	}
}

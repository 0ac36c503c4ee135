package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The oracle loops of the DuckDB tests: the same statements on PostgreSQL and through
// QueryFlux on DuckDB, their outcomes and the rows read back compared.

// tagOrState is a statement's outcome as compared: its command tag, or "error " and its
// SQLSTATE.
func tagOrState(c *pgx.Conn, sql string, args ...any) string {
	tag, err := c.Exec(context.Background(), sql, args...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return "error " + pe.Code
	} else if err != nil {
		return "error " + err.Error()
	}
	return tag.String()
}

// rowsText is a query's rows (simple protocol), each as fmt.Sprint writes its values.
func rowsText(c *pgx.Conn, sql string) string {
	rows, err := c.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return "error " + err.Error()
		}
		out = append(out, fmt.Sprint(v))
	}
	if err := rows.Err(); err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprint(out)
}

// tablesText is rowsText of each query, joined.
func tablesText(c *pgx.Conn, queries ...string) string {
	out := make([]string, len(queries))
	for i, q := range queries {
		out[i] = rowsText(c, q)
	}
	return strings.Join(out, " | ")
}

// sameOutcomes runs each statement on both and fails t where the outcomes differ.
func sameOutcomes(t *testing.T, pg, duck *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, sql := range stmts {
		if want, got := tagOrState(pg, sql), tagOrState(duck, sql); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
	}
}

// sameRows reads each query on both and fails t where the rows differ.
func sameRows(t *testing.T, pg, duck *pgx.Conn, queries ...string) {
	t.Helper()
	for _, sql := range queries {
		want, got := rowsText(pg, sql), rowsText(duck, sql)
		if want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
		t.Logf("%s\n  %s", sql, want)
	}
}

// execBoth runs each statement on both, failing t at the first error.
func execBoth(t *testing.T, pg, duck *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, sql := range stmts {
		for _, c := range []*pgx.Conn{pg, duck} {
			if _, err := c.Exec(context.Background(), sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
	}
}

// oracleStep is a statement sameSteps runs, with its arguments.
type oracleStep struct {
	sql  string
	args []any
}

// sameSteps runs each step on both and fails t where the outcomes, or the states read after
// it, differ.
func sameSteps(t *testing.T, pg, duck *pgx.Conn, state func(*pgx.Conn) string, steps ...oracleStep) {
	t.Helper()
	for _, s := range steps {
		if want, got := tagOrState(pg, s.sql, s.args...), tagOrState(duck, s.sql, s.args...); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, want, got)
		}
		if want, got := state(pg), state(duck); want != got {
			t.Errorf("after %s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, want, got)
		}
	}
}

// outcome is what a client reads of a statement: the columns' names and types and the rows,
// or its command tag, or "error " and its SQLSTATE.
func outcome(c *pgx.Conn, sql string, args ...any) string { return readOutcome(c, true, sql, args...) }

// namedOutcome is outcome without the columns' types.
func namedOutcome(c *pgx.Conn, sql string, args ...any) string {
	return readOutcome(c, false, sql, args...)
}

// readOutcome is outcome, the columns' types with them when typed.
func readOutcome(c *pgx.Conn, typed bool, sql string, args ...any) string {
	var pe *pgconn.PgError
	rows, err := c.Query(context.Background(), sql, args...)
	if errors.As(err, &pe) {
		return "error " + pe.Code
	} else if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	var out []string
	for _, f := range rows.FieldDescriptions() {
		if out = append(out, f.Name); typed {
			out[len(out)-1] += fmt.Sprintf(":%d", f.DataTypeOID)
		}
	}
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return "error " + err.Error()
		}
		out = append(out, fmt.Sprint(v...))
	}
	if err := rows.Err(); errors.As(err, &pe) {
		return "error " + pe.Code
	} else if err != nil {
		return "error " + err.Error()
	}
	if len(rows.FieldDescriptions()) == 0 {
		return rows.CommandTag().String()
	}
	return strings.Join(out, " ")
}

// sameAnswers runs each step on both and fails t where what the client reads (read: outcome
// or namedOutcome) differs.
func sameAnswers(t *testing.T, pg, duck *pgx.Conn, read func(*pgx.Conn, string, ...any) string, steps ...oracleStep) {
	t.Helper()
	for _, s := range steps {
		if want, got := read(pg, s.sql, s.args...), read(duck, s.sql, s.args...); want != got {
			t.Errorf("%s %v\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, s.args, want, got)
		}
	}
}

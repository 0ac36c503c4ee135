package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestCheckViolationAsPostgreSQL: a violated CHECK constraint is PostgreSQL's error as a
// client reads it: 23514, `new row for relation "t" violates check constraint "t_n_check"`,
// the constraint's, table's and schema's names in the error's fields (what pgx's
// ConstraintName, JDBC's getServerErrorMessage().getConstraint() and Django's IntegrityError
// handling read), for an INSERT, an UPDATE, a parameter's value, a check added by ALTER TABLE
// with its name, a table in another schema, and in a transaction. DETAIL ("Failing row
// contains ...") is PostgreSQL's alone: DuckDB says no row.
func TestCheckViolationAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "checkmsg").URL())
	execBoth(t, pg, duck, "create table cm_t (id int primary key, n int check (n > 0), s text check (s <> 'x'), m int)",
		"alter table cm_t add constraint cm_t_small check (m < 100)",
		"create schema cm_s", "create table cm_s.cm_u (id int, v int check (v <> 13))",
		"insert into cm_t values (1, 5, 'a', 1)")
	steps := []oracleStep{
		{"insert into cm_t values (2, -1, 'b', 1)", nil},
		{"insert into cm_t values (3, 1, 'x', 1)", nil},
		{"insert into cm_t values ($1, $2, 'c', 1)", []any{4, 0}},
		{"update cm_t set m = 500 where id = 1", nil},
		{"insert into cm_s.cm_u values (1, 13)", nil},
		{"insert into cm_t values (5, 7, 'ok', 1)", nil},
	}
	for _, s := range steps {
		if want, got := checkError(pg, s.sql, s.args...), checkError(duck, s.sql, s.args...); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, want, got)
		}
	}
	for _, c := range []*pgx.Conn{pg, duck} {
		if _, err := c.Exec(context.Background(), "begin"); err != nil {
			t.Fatal(err)
		}
	}
	if want, got := checkError(pg, "update cm_t set s = 'x'"), checkError(duck, "update cm_t set s = 'x'"); want != got {
		t.Errorf("in a transaction\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", want, got)
	}
	for _, c := range []*pgx.Conn{pg, duck} {
		_, _ = c.Exec(context.Background(), "rollback")
	}
}

// checkError is a statement's error as a client reads it, but DETAIL: the SQLSTATE, message,
// and the schema's, table's and constraint's names; else its command tag.
func checkError(c *pgx.Conn, sql string, args ...any) string {
	tag, err := c.Exec(context.Background(), sql, args...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %q schema=%q table=%q constraint=%q", pe.Code, pe.Message, pe.SchemaName, pe.TableName, pe.ConstraintName)
	} else if err != nil {
		return err.Error()
	}
	return tag.String()
}

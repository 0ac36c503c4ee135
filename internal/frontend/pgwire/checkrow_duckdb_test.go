package pgwire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// checkDetail is a statement's error's SQLSTATE and DETAIL, or its command tag.
func checkDetail(c *pgx.Conn, sql string, args ...any) string {
	tag, err := c.Exec(context.Background(), sql, args...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " detail=" + pe.Detail
	} else if err != nil {
		return err.Error()
	}
	return tag.String()
}

// TestCheckViolationDetailAsPostgreSQL: a violated CHECK's DETAIL names the failing row as
// PostgreSQL's does, `Failing row contains (...)`: every column in the table's order, the
// defaults of those an INSERT does not give, null, booleans as t and f, numerics and dates as
// PostgreSQL writes them, a value over 64 bytes cut (at a character's end) and followed by
// ...; the first failing row of several; an UPDATE's row as it would have been written;
// literals and parameters.
func TestCheckViolationDetailAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "checkrow").URL())
	execBoth(t, pg, duck, "create table cr (id int primary key, a int check (a > 0), t text, b boolean default true, "+
		"n numeric(7,2) default 1.5, d date, v varchar(10), check (length(t) < 80))",
		"insert into cr values (1, 1, 'one', false, 2.25, '2020-01-02', 'v')")
	for _, s := range []oracleStep{
		{"insert into cr values (2, -1, 'x', true, 3, '2021-03-04', 'w')", nil},
		{"insert into cr (id, a) values (2, -5)", nil},
		{"insert into cr (a, id, t) values (1, 2, 'ok'), (-2, 3, null)", nil},
		{"insert into cr values ($1, $2, $3)", []any{4, -9, "param"}},
		{"insert into cr (id, a, t) values (5, 1, repeat('x', 90))", nil},
		{"insert into cr (id, a, t) values (5, 1, repeat('é', 50))", nil},
		{"update cr set a = a - 10 where id = 1", nil},
		{"update cr set a = $1, t = 'upd' where id = $2", []any{-3, 1}},
		{"update cr set a = 0", nil},
		{"insert into cr values (6, 6, 'six')", nil},
		{"update cr c set a = -1 where c.id = 6 returning id", nil},
	} {
		if want, got := checkDetail(pg, s.sql, s.args...), checkDetail(duck, s.sql, s.args...); want != got {
			t.Errorf("%s %v\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, s.args, want, got)
		}
	}
}

package pgwire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A constraint's violation carries the SQLSTATE PostgreSQL gives it (applications test 23505
// for "already exists"), where DuckDB has one error class for all of them.
func TestConstraintViolationsOnDuckDB(t *testing.T) {
	o := newOracle(t)
	ctx := context.Background()
	for _, c := range []*pgconn.PgConn{o.pg, o.duck} {
		for _, sql := range []string{
			"create table cv1 (id int primary key, u text unique, n int not null, c int check (c > 0))",
			"create table cv2 (id int, ref int references cv1(id))",
			"insert into cv1 values (1, 'a', 1, 1)",
		} {
			if _, err := c.Exec(ctx, sql).ReadAll(); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
	}
	code := func(c *pgconn.PgConn, sql string) string {
		_, err := c.Exec(ctx, sql).ReadAll()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return "no error"
	}
	for _, sql := range []string{
		"insert into cv1 values (1, 'b', 1, 1)",    // primary key
		"insert into cv1 values (2, 'a', 1, 1)",    // unique
		"insert into cv1 values (3, 'c', null, 1)", // not null
		"insert into cv1 values (4, 'd', 1, 0)",    // check
		"insert into cv2 values (1, 99)",           // foreign key
		"update cv1 set u = null, n = null",        // not null, on update
	} {
		if want, got := code(o.pg, sql), code(o.duck, sql); got != want {
			t.Errorf("%s: SQLSTATE %s, PostgreSQL's %s", sql, got, want)
		}
	}
}

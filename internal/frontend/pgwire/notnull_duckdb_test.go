package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestNotNullAndUniqueViolationsAsPostgreSQL: a NULL written into a NOT NULL column, and a duplicate key,
// on the embedded DuckDB are PostgreSQL's errors: the message, the failing row or the key in
// the DETAIL, the schema's, table's, column's and constraint's names in the fields, for INSERT
// (literals, parameters, a column left to its default, several rows, a primary key of two
// columns, one whose text column comes first, a UNIQUE column) and UPDATE, outside a transaction and in one.
func TestNotNullAndUniqueViolationsAsPostgreSQL(t *testing.T) {
	pg := connect(t, pgtest.NewDatabase(t))
	duck := connect(t, memoryDuckProxy(t, "notnull").URL())
	ctx := context.Background()
	for _, c := range []*pgconn.PgConn{pg.PgConn(), duck.PgConn()} {
		if _, err := c.Exec(ctx, `create table nn (id int primary key, e text, n int not null, d text not null default 'x')`).ReadAll(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `create table uq (a int, b text, c int, primary key (a, b), unique (c)); insert into uq values (1, 'x, y: z', 3)`).ReadAll(); err != nil {
			t.Fatal(err)
		}
		// A key whose text column comes first: its value's ", " is not the end of the column.
		if _, err := c.Exec(ctx, `create table uk (b text, a int, primary key (b, a)); insert into uk values ('x, y', 1), ('q, r', 1)`).ReadAll(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `insert into nn values (1, 'a', 1, 'y')`).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(err error) string {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			return fmt.Sprint(err)
		}
		return fmt.Sprintf("%s %s | %s | %s.%s.%s %s", pe.Code, pe.Message, pe.Detail, pe.SchemaName, pe.TableName, pe.ColumnName, pe.ConstraintName)
	}
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{"insert into nn values (2, 'b', null, 'z')", nil},
		{"insert into nn (id, e) values (3, 'c')", nil},
		{"insert into nn values ($1, $2, $3, $4)", []any{4, "d", nil, "w"}},
		{"insert into nn values (5, 'e', 5, 'v'), (6, null, null, 'u')", nil},
		{"insert into nn values (7, 'g', 7, null)", nil},
		{"update nn set n = null where id = 1", nil},
		{"update nn set e = 'q', d = $1 where id = $2", []any{nil, 1}},
		{"insert into nn values (1, 'b', 2, 'x')", nil},
		{"insert into nn values ($1, 'b', 2, 'x')", []any{1}},
		{"insert into uq values (1, 'x, y: z', 4)", nil},
		{"insert into uq values (2, 'w', 3)", nil},
		{"insert into uk values ('x, y', 1)", nil},
		{"update uk set b = 'x, y' where b = $1", []any{"q, r"}},
		{"insert into uk values ('s, t', 1), ('x, y', 1)", nil},
		{"insert into public.uq as u values (2, 'w', $1)", []any{3}},
	} {
		for _, inTx := range []bool{false, true} {
			run := func(c *pgconn.PgConn) string {
				if inTx {
					_, _ = c.Exec(ctx, "begin").ReadAll()
					defer func() { _, _ = c.Exec(ctx, "rollback").ReadAll() }()
				}
				if s.args == nil {
					_, err := c.Exec(ctx, s.sql).ReadAll()
					return answer(err)
				}
				params := make([][]byte, len(s.args))
				for i, a := range s.args {
					if a != nil {
						params[i] = []byte(fmt.Sprint(a))
					}
				}
				return answer(c.ExecParams(ctx, s.sql, params, nil, nil, nil).Read().Err)
			}
			if want, got := run(pg.PgConn()), run(duck.PgConn()); want != got {
				t.Errorf("%s (in a transaction: %v)\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, inTx, want, got)
			}
		}
	}
}

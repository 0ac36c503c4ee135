package pgwire_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
)

// TestCursorsOnDuckDBAsPostgreSQL: SQL cursors (DECLARE, FETCH and MOVE in each forward
// direction, CLOSE, CLOSE ALL) answer on DuckDB as on PostgreSQL, through pgx in the simple
// protocol and with prepared statements (a FETCH is described before it runs), with
// PostgreSQL's errors: DECLARE outside a transaction, a missing cursor, a backward FETCH of a
// NO SCROLL cursor, each failing the transaction.
func TestCursorsOnDuckDBAsPostgreSQL(t *testing.T) {
	steps := []string{
		"declare c cursor for select 1",
		"begin",
		"declare c no scroll cursor for select x from generate_series(1, 10) as g(x) order by g.x",
		"declare c cursor for select 1",
		"rollback",
		"begin",
		"declare c no scroll cursor for select x, x * 10 as y from generate_series(1, 10) as g(x) order by g.x",
		"fetch from c",
		"fetch next from c",
		"fetch 2 from c",
		"fetch forward 2 in c",
		"move 1 from c",
		"fetch relative 2 from c",
		"fetch absolute 10 from c",
		"fetch all from c",
		"fetch all from c",
		"fetch forward all from c",
		"close c",
		`declare "Mixed" binary cursor without hold for values (1, 'a'), (2, 'b'), (3, 'c')`,
		`fetch first from "Mixed"`,
		`fetch last from "Mixed"`,
		`declare c2 cursor for select 42 as n`,
		"move all in c2",
		"fetch c2",
		"close all",
		"fetch 1 from c2",
		"select 1",
		"rollback",
		"begin",
		"declare c no scroll cursor for select x from generate_series(1, 5) as g(x)",
		"fetch 3 from c",
		"fetch backward 1 from c",
		"select 1",
		"rollback",
		"begin",
		"declare c no scroll cursor for select x from generate_series(1, 5) as g(x)",
		"fetch forward 3 from c",
		"fetch absolute 3 from c",
		"rollback",
		"begin",
		"declare c no scroll cursor for select x from generate_series(1, 5) as g(x)",
		"fetch forward 3 from c",
		"fetch relative 0 from c",
		"rollback",
		"begin",
		"close nope",
		"rollback",
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		for _, pool := range poolModes {
			t.Run(pool+"/"+mode.String(), func(t *testing.T) {
				ctx := context.Background()
				run := func(d pgclienttest.DSN) []string {
					c := connect(t, d.URL())
					var out []string
					for _, s := range steps {
						out = append(out, pgxCells(ctx, c, s, []any{mode}))
					}
					return out
				}
				want, got := run(pgProxy(t, pool)), run(duckProxy(t, pool))
				for i := range steps {
					if got[i] != want[i] {
						t.Errorf("%q: DuckDB answers %s, PostgreSQL %s", steps[i], got[i], want[i])
					}
				}
			})
		}
	}
}

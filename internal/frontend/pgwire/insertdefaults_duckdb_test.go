package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestInsertFewerValuesAsPostgreSQL: INSERT INTO t VALUES (...) without a column list and with
// fewer values than t has columns fills the first columns and gives the rest their defaults,
// as PostgreSQL does: literals, parameters, several rows, a qualified name with an alias,
// RETURNING, ON CONFLICT, a serial key, in a transaction; rows of different lengths are an
// error on both.
func TestInsertFewerValuesAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "fewervalues").URL())
	execBoth(t, pg, duck, "create table fv (a int primary key, b text default 'dflt', c int default 7, d varchar(3))",
		"create table fs (id serial primary key, s text default 'q', n int)")
	state := func(c *pgx.Conn) string {
		return tablesText(c, "select * from fv order by a", "select * from fs order by id")
	}
	sameSteps(t, pg, duck, state,
		oracleStep{"insert into fv values (1)", nil},
		oracleStep{"insert into fv values (2, 'x')", nil},
		oracleStep{"insert into fv values (3, 'y', 8)", nil},
		oracleStep{"insert into fv values (4), (5)", nil},
		oracleStep{"insert into fv values ($1, $2)", []any{6, "p"}},
		oracleStep{"insert into public.fv as f values (9, (select max(b) from fv))", nil},
		oracleStep{"insert into fv values (10, 'r') returning *", nil},
		oracleStep{"insert into fv values (1, 'again') on conflict (a) do update set b = excluded.b", nil},
		oracleStep{"insert into fv values (11, 'toolong', 1, 'abcd')", nil},
		oracleStep{"insert into fs values (default)", nil},
		oracleStep{"insert into fs values (default, 'w')", nil},
		oracleStep{"begin", nil},
		oracleStep{"insert into fv values (12)", nil},
		oracleStep{"commit", nil},
	)
	sameRows(t, pg, duck, "insert into fv values (13, array_to_string(array['a', 'b'], ',')) returning a, b, c")
}

package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestDropUniqueConstraintAsPostgreSQL: a unique constraint ALTER TABLE added (Django's
// AddConstraint(UniqueConstraint), Rails' add_unique_constraint) is dropped by ALTER TABLE ...
// DROP CONSTRAINT (Django's RemoveConstraint) as on PostgreSQL 15: the duplicate it refused
// (23505) is taken afterwards; IF EXISTS of a gone one, and one that never was (42704). It was
// DuckDB's "No support for that ALTER TABLE option" (0A000). (pg_constraint does not list such a
// constraint: it is an index here; RESULTS, session 39.)
func TestDropUniqueConstraintAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "dropunique").URL())
	state := func(c *pgx.Conn) string {
		return tablesText(c, "select a, b from du_t order by a, b")
	}
	execBoth(t, pg, duck, "create table du_t (id serial primary key, a int, b text)", "insert into du_t (a, b) values (1, 'x')")
	sameSteps(t, pg, duck, state,
		oracleStep{`alter table "du_t" add constraint "du_t_ab_uq" unique ("a", "b")`, nil},
		oracleStep{"insert into du_t (a, b) values (1, 'x')", nil},
		oracleStep{`alter table "du_t" drop constraint "du_t_ab_uq"`, nil},
		oracleStep{"insert into du_t (a, b) values (1, 'x')", nil},
		oracleStep{"alter table du_t drop constraint if exists du_t_ab_uq", nil},
		oracleStep{"alter table du_t drop constraint du_t_nope", nil},
	)
}

package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestDeleteAfterActionsInTransactionAsPostgreSQL: a DELETE performed with its ON DELETE
// actions in a transaction (pgrefintx.go) counts as a write of its table and of the tables
// its actions wrote, so a later DELETE of the row its table referenced, in the same
// transaction, runs as on PostgreSQL 15 (DuckDB keeps a deleted key's entry until commit).
func TestDeleteAfterActionsInTransactionAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "actionswritten").URL())
	tables := []string{"select id from aw_g order by id", "select id, gid from aw_t order by id", "select id, tid from aw_c order by id"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		`create table aw_g (id int primary key)`,
		`create table aw_t (id int primary key, gid int references aw_g (id))`,
		`create table aw_c (id int primary key, tid int references aw_t (id) on delete cascade)`,
		`insert into aw_g values (1), (2)`,
		`insert into aw_t values (1, 1), (2, 2)`,
		`insert into aw_c values (1, 1), (2, 2)`,
	)
	sameSteps(t, pg, duck, state,
		oracleStep{"begin", nil},
		oracleStep{"delete from aw_t where id = $1", []any{1}},
		oracleStep{"delete from aw_g where id = $1", []any{1}},
		oracleStep{"commit", nil},
		oracleStep{"begin", nil},
		oracleStep{"delete from aw_t where gid = 2", nil},
		oracleStep{"delete from aw_g where id = 2", nil},
		oracleStep{"commit", nil},
	)
}

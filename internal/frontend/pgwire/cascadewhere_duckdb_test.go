package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestActionsWhoseWhereReadsReferencingTables: a DELETE / UPDATE with ON DELETE / ON UPDATE
// actions whose WHERE reads a referencing table (NOT EXISTS, IN, EXISTS over the child) runs on
// the embedded DuckDB as on PostgreSQL 15: the WHERE is read once, on the tables as they were,
// whether the referencing tables are hidden (one with an index of its own, as Django and Rails
// declare every key column) or created again (a second level), outside a transaction and in
// one, simple and extended protocol.
func TestActionsWhoseWhereReadsReferencingTables(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "cascadewhere").URL())
	tables := []string{"select id, n from rw_p order by id", "select id, pid from rw_c order by id",
		"select id, pid from rw_s order by id"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		"create table rw_p (id int primary key, n text)",
		"create table rw_c (id int primary key, pid int references rw_p on delete cascade on update cascade)",
		"create index rw_c_pid on rw_c (pid)",
		"create table rw_s (id int primary key, pid int references rw_p (id) on delete set null on update set null)",
		"insert into rw_p select i, 'n' || i from generate_series(1, 20) g(i)",
		"insert into rw_c values (10, 1), (11, 1), (12, 2), (13, 3), (14, 4), (15, 5), (16, 6), (17, 7), (18, 8), (19, 9), (20, 10), (21, 11), (22, 12)",
		"insert into rw_s values (30, 1), (31, 3), (32, 5), (33, 7), (34, 9), (35, 11), (36, 13)",
	)
	sameSteps(t, pg, duck, state, // the referencing tables hidden (rw_c with its index)
		oracleStep{"delete from rw_p where not exists (select 1 from rw_c where rw_c.pid = rw_p.id and rw_c.id < 12) and id < 6", []any{pgx.QueryExecModeSimpleProtocol}},
		oracleStep{"delete from rw_p p where p.id in (select pid from rw_c where id = $1)", []any{16}},
		oracleStep{"update rw_p set id = id + 100 where id in (select pid from rw_c where id > 20)", nil},
		oracleStep{"update rw_p p set id = p.id + $1, n = 'moved' where exists (select 1 from rw_s where rw_s.pid = p.id and rw_s.id < $2)", []any{1000, 34}},
		oracleStep{"delete from rw_p where id not in (select pid from rw_c where pid is not null) and id < 15", nil},
	)
	// a table referencing rw_c: the family is created again
	execBoth(t, pg, duck, "create table rw_g (id int primary key, cid int references rw_c)", "insert into rw_g values (50, 18)")
	sameSteps(t, pg, duck, state, oracleStep{"begin", nil}, oracleStep{"insert into rw_c values (40, 15)", nil},
		oracleStep{"delete from rw_p where id in (select pid from rw_c where id >= $1)", []any{40}},
		oracleStep{"delete from rw_p where exists (select 1 from rw_s where rw_s.pid = rw_p.id) and id <> 8", nil},
		oracleStep{"update rw_p set id = -id where exists (select 1 from rw_c c where c.pid = rw_p.id)", nil},
		oracleStep{"commit", nil})
	t.Log(state(pg))
}

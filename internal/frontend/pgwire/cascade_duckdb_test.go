package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestOnDeleteActionsAsPostgreSQL: a DELETE of referenced rows outside a transaction performs
// the keys' ON DELETE CASCADE and SET NULL on the embedded DuckDB as PostgreSQL 15 does (pgx,
// simple and extended protocol, an alias, several rows, two keys to one table), a key without
// an action still refuses it (23503) and nothing is changed; in a
// transaction too.
func TestOnDeleteActionsAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "cascade").URL())
	tables := []string{"select id, n from cd_p order by id", "select id, pid from cd_c order by id",
		"select id, pid from cd_s order by id", "select id, pid from cd_k order by id",
		"select obj_description('cd_c'::regclass, 'pg_class'), col_description('cd_s'::regclass, 2)"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		"create table cd_p (id int primary key, n text)",
		"create table cd_c (id int primary key, pid int references cd_p (id) on delete cascade)",
		"create table cd_s (id int primary key, pid int constraint cd_s_parent references cd_p on delete set null on update cascade)",
		"create table cd_k (id int primary key, pid int references cd_p (id))",
		"insert into cd_p values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f'), (7, 'g'), (8, 'h')",
		"insert into cd_c values (10, 1), (11, 1), (12, 2), (13, 5), (14, 7), (15, 8)",
		"insert into cd_s values (20, 1), (21, 3), (22, 5), (23, 8)",
		"insert into cd_k values (30, 4), (31, 5)",
		"comment on table cd_c is 'kids'", "comment on column cd_s.pid is 'parent'", // kept when the table is created again
	)
	sameSteps(t, pg, duck, state,
		oracleStep{"delete from cd_p where id = 1", nil},              // cascade and set null
		oracleStep{"delete from cd_p where id = $1", []any{3}},        // extended protocol: set null only
		oracleStep{"delete from cd_p p where p.n in ('b', 'f')", nil}, // an alias; 6 referenced by none
		oracleStep{"delete from cd_p where id = 4", nil},              // a key without an action: 23503
		oracleStep{"delete from cd_p where id = 5", nil},              // both: refused, nothing changed
		oracleStep{"delete from cd_p where id = 9", nil},              // no row
	)
	// In a transaction: the actions as there, on rows the transaction wrote too, and a key
	// without an action fails the transaction, which COMMIT rolls back.
	sameSteps(t, pg, duck, state, oracleStep{"begin", nil}, oracleStep{"insert into cd_c values (16, 7)", nil},
		oracleStep{"delete from cd_p where id = 7", nil}, oracleStep{"insert into cd_c values (17, 8)", nil},
		oracleStep{"delete from cd_p where id = $1", []any{8}}, oracleStep{"insert into cd_c values (18, 5)", nil}, oracleStep{"commit", nil})
	sameOutcomes(t, pg, duck, "begin", "delete from cd_p where id = 5", "select 1", "commit")
	if want, got := state(pg), state(duck); want != got {
		t.Errorf("after the failed transaction\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", want, got)
	}
	t.Log(state(pg))
}

// TestOnUpdateActionsAsPostgreSQL: an UPDATE of referenced keys outside a transaction performs
// the keys' ON UPDATE CASCADE and SET NULL on the embedded DuckDB as PostgreSQL 15 does (pgx,
// simple and extended protocol, an alias, an expression over several rows, a key of two
// columns), RESTRICT and NO ACTION still refuse it (23503) and nothing is changed, nor when a
// step fails after others succeeded (a cascaded key a CHECK refuses); an UPDATE that changes no key, or changes one nothing references, is DuckDB's own;
// in a transaction too.
func TestOnUpdateActionsAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "onupdate").URL())
	tables := []string{"select id, n from ou_p order by id", "select id, pid, note from ou_c order by id",
		"select id, pid from ou_s order by id", "select id, pid from ou_r order by id", "select a, b, n from ou_p2 order by a, b",
		"select id, a, b from ou_c2 order by id", "select id, pid from ou_k order by id"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		"create table ou_p (id int primary key, n text)",
		"create table ou_c (id int primary key, pid int references ou_p on update cascade on delete cascade, note varchar(10) default 'd')",
		"create table ou_s (id int primary key, pid int references ou_p (id) on update set null)",
		"create table ou_r (id int primary key, pid int references ou_p on update restrict)",
		"create table ou_p2 (a int, b text, n int, primary key (a, b))",
		"create table ou_c2 (id int primary key, a int, b text, foreign key (a, b) references ou_p2 on update cascade)",
		"insert into ou_p values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')",
		"insert into ou_c values (10, 1, 'x'), (11, 1, 'y'), (12, 2, 'z'), (13, 6, 'w'), (14, 4, 'r')",
		"insert into ou_s values (20, 1), (21, 3), (22, 6)",
		"insert into ou_r values (30, 4)",
		"insert into ou_p2 values (1, 'a', 0), (2, 'b', 0)",
		"insert into ou_c2 values (40, 1, 'a'), (41, 2, 'b')",
		"create table ou_k (id int primary key, pid int references ou_p on update cascade, check (pid < 100))",
		"insert into ou_p values (50, 'k')",
		"insert into ou_c values (15, 50, 'k')",
		"insert into ou_k values (60, 50)",
	)
	sameSteps(t, pg, duck, state,
		oracleStep{"update ou_p set n = 'z' where id = 1", nil},                                            // no key changed
		oracleStep{"update ou_p set id = 101 where id = 1", nil},                                           // cascade and set null
		oracleStep{"update ou_p set id = $1, n = $2 where id = $3", []any{102, "B", 2}},                    // extended protocol
		oracleStep{"update ou_p p set id = p.id + 200 where p.n in ('c', 'e')", nil},                       // an alias, two rows; 5 referenced by none
		oracleStep{"update ou_p set id = 104 where id = 4", nil},                                           // RESTRICT: 23503, nothing changed
		oracleStep{"update ou_p set id = 7, n = 'g' where id = 6", []any{pgx.QueryExecModeSimpleProtocol}}, // cascade, set null
		oracleStep{"update ou_p set id = 8 where id = 9", nil},                                             // no row
		oracleStep{"update ou_p2 set a = a * 10, b = upper(b) where a = 1", nil},                           // a key of two columns
		oracleStep{"update ou_p2 set n = 1", nil},
		// a step that fails after others succeeded: ou_c's cascade done, ou_k's refused by its
		// CHECK (23514); nothing is changed, the parent's key neither
		oracleStep{"update ou_p set id = 150 where id = 50", nil},
	)
	// In a transaction: the actions as there, and a key without an action (RESTRICT) fails the
	// transaction, which COMMIT rolls back.
	sameSteps(t, pg, duck, state, oracleStep{"begin", nil}, oracleStep{"insert into ou_c values (16, 7, 'n')", nil},
		oracleStep{"update ou_p set id = 9 where id = 7", nil}, oracleStep{"update ou_p set n = 'x' where id = 9", nil},
		oracleStep{"update ou_p2 set b = $1 where a = $2", []any{"c", 2}}, oracleStep{"commit", nil})
	sameOutcomes(t, pg, duck, "begin", "update ou_p set id = 9 where id = 9", "update ou_p set id = 105 where id = 4", "select 1", "commit")
	if want, got := state(pg), state(duck); want != got {
		t.Errorf("after the failed transaction\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", want, got)
	}
	t.Log(state(pg))
}

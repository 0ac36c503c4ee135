package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestChainedOnUpdateActionsAsPostgreSQL: an UPDATE of a natural key whose ON UPDATE CASCADE
// changes columns that keys of further tables reference with ON UPDATE actions of their own
// reaches every level as on PostgreSQL 15 (A <- B <- C <- D by code, CASCADE at each level; a
// SET NULL at the second level whose rows' nulled column is referenced in turn; a composite key;
// two children of one table; a parameter), a NO ACTION key at the third level refuses it (23503)
// and nothing changes. It was 0A000 ("one level deep").
func TestChainedOnUpdateActionsAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "updatechain").URL())
	tables := []string{"select code, v from uc_a order by code", "select code, n from uc_b order by code, n",
		"select id, bcode, n from uc_c order by id", "select id, cb, cn from uc_d order by id",
		"select id, bcode from uc_s order by id", "select id, scode from uc_t order by id", "select id, cb from uc_k order by id"}
	state := func(c *pgx.Conn) string { return tablesText(c, tables...) }
	execBoth(t, pg, duck,
		"create table uc_a (code text primary key, v int)",
		"create table uc_b (code text references uc_a on update cascade, n int, primary key (code, n))",
		"create table uc_c (id int primary key, bcode text, n int, unique (bcode, n), foreign key (bcode, n) references uc_b on update cascade)",
		"create table uc_d (id int primary key, cb text, cn int, foreign key (cb, cn) references uc_c (bcode, n) on update cascade)",
		"create table uc_s (id int primary key, bcode text unique, foreign key (bcode) references uc_a on update set null)",
		"create table uc_t (id int primary key, scode text references uc_s (bcode) on update cascade)",
		"insert into uc_a values ('a', 1), ('b', 2), ('c', 3), ('k', 4)",
		"insert into uc_b values ('a', 1), ('a', 2), ('b', 1), ('c', 1), ('k', 1)",
		"insert into uc_c values (10, 'a', 1), (11, 'a', 2), (12, 'b', 1), (13, 'k', 1)",
		"insert into uc_d values (20, 'a', 1), (21, 'a', 2), (22, 'b', 1), (23, null, null), (24, 'k', 1)",
		"insert into uc_s values (30, 'a'), (31, 'c')",
		"insert into uc_t values (40, 'a'), (41, 'c'), (42, null)",
		"create table uc_k (id int primary key, cb text, cn int, foreign key (cb, cn) references uc_c (bcode, n))",
		"insert into uc_k values (50, 'k', 1)")
	sameSteps(t, pg, duck, state,
		oracleStep{"update uc_a set code = 'a2' where code = 'a'", nil},               // B, C, D follow; S set null, T with it
		oracleStep{"update uc_a set code = $1 where code = $2", []any{"b2", "b"}},     // extended
		oracleStep{"update uc_a set code = code || '!', v = v + 1 where v >= 3", nil}, // k: uc_k (no action) refuses: 23503
		oracleStep{"update uc_b set code = 'c' where code = 'c'", nil},                // no change of value
		oracleStep{"delete from uc_k", nil},
		oracleStep{"update uc_a set code = upper(code) where v >= 3", nil}, // now; c's S and T nulled
		oracleStep{"update uc_a set v = 9", nil},                           // no key changed
	)
}

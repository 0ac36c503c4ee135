package pgwire_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestRenamesAndDuplicatesAsPostgreSQL: a migration's renames (RENAME COLUMN, RENAME TO) on the
// embedded DuckDB keep what the client declared (varchar(12), numeric(10,2), jsonb, the key's
// name t_pkey) and the table's indexes, and a name given twice (a named UNIQUE constraint, a
// table, an index, a sequence, a schema) is refused with PostgreSQL's SQLSTATE (42P07, 42P06),
// each statement's outcome and the catalog read back the same as on PostgreSQL 15 (pgx).
func TestRenamesAndDuplicatesAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "renames").URL())
	sameOutcomes(t, pg, duck,
		"create table rn_u (id int primary key, a int, b text)",
		"alter table rn_u add constraint rn_u_a_uq unique (a)",
		"alter table rn_u add constraint rn_u_a_uq unique (a)",
		"alter table rn_u add constraint rn_u_a_uq unique (b)",
		"alter table rn_u add unique (b)",
		"create table rn_u (id int)",
		"create index rn_u_b on rn_u (b)",
		"create index rn_u_b on rn_u (a)",
		"create sequence rn_s",
		"create sequence rn_s",
		"create schema rn_sch",
		"create schema rn_sch",
		"create table rn_t (id serial primary key, code varchar(12), price numeric(10,2), meta jsonb)",
		"insert into rn_t (code, price, meta) values ('x', 1.5, '{}')",
		"create index rn_t_code on rn_t (code)",
		"alter table rn_t add column tag varchar(7)",
		"alter table rn_t add column if not exists tag text",
		"alter table rn_t rename column code to kode",
		"alter table rn_t rename to rn_t2",
		`alter table "rn_t2" rename "meta" to doc`,
		"insert into rn_t2 (kode, price, tag, doc) values ('y', 2, 'z', '[]')",
		"begin",
		"alter table rn_t2 rename column tag to label",
		"rollback",
	)
	sameRows(t, pg, duck,
		`select table_name, column_name, data_type, udt_name, character_maximum_length, numeric_precision, numeric_scale, column_default
			from information_schema.columns where table_schema = 'public' and table_name like 'rn_t%' order by ordinal_position`,
		`select a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a join pg_class c on c.oid = a.attrelid
			where c.relname = 'rn_t2' and a.attnum > 0 order by a.attnum`,
		`select c.conname, c.contype::text from pg_constraint c join pg_class t on t.oid = c.conrelid where t.relname like 'rn_t%' order by 1`,
		`select tablename, indexname, indexdef from pg_indexes where tablename like 'rn_t%' order by 2`,
		`select kode, price, tag, doc::text from rn_t2 order by id`,
		// The serial column's sequence keeps its name (Django's sequence reset reads it).
		`select pg_get_serial_sequence('rn_t2', 'id'), pg_get_serial_sequence('public.rn_t2', 'id'), pg_get_serial_sequence('rn_t2', 'kode')`)
}

// TestRenamesOfKeysAsPostgreSQL: renames DuckDB refuses in place because a foreign key is
// involved (a referenced table, a referenced key column, a referencing column, three tables
// deep) and RENAME CONSTRAINT (a primary key, a unique constraint added by ALTER TABLE, a
// foreign key), each statement's outcome (command tag or SQLSTATE) and the catalog and rows read
// back the same on the embedded DuckDB as on PostgreSQL 15 (pgx).
func TestRenamesOfKeysAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "keyrenames").URL())
	sameOutcomes(t, pg, duck,
		"create table kr_p (id serial primary key, code varchar(12) unique, note text)",
		"create table kr_c (id serial primary key, pid int not null references kr_p (id) on delete cascade, label varchar(20), check (pid > 0))",
		"create table kr_g (id int primary key, cid int constraint kr_g_child references kr_c, qty numeric(8,2))",
		"create index kr_c_label on kr_c (label)",
		"create index kr_g_qty on kr_g (cid, qty)",
		"insert into kr_p (code, note) values ('a', 'x'), ('b', 'y')",
		"insert into kr_c (pid, label) values (1, 'one'), (2, 'two')",
		"insert into kr_g values (100, 1, 2.5), (101, 2, 3)",
		"alter table kr_p rename to kr_parent",
		"insert into kr_c (pid, label) values (9, 'orphan')",
		"insert into kr_c (pid, label) values (2, 'three')",
		"alter table kr_parent rename column id to parent_id",
		"alter table kr_c rename column pid to parent_ref",
		"alter table kr_c rename column label to title",
		"alter table kr_c rename column nope to other",
		"alter table kr_c rename column title to id",
		"alter table kr_c rename to kr_g",
		"alter table kr_c rename to kr_child",
		"insert into kr_g values (102, 9, 1)",
		"insert into kr_g values (102, 4, 1)",
		"insert into kr_child (parent_ref, title) values (1, 'four')",
		"delete from kr_parent where parent_id = 1",
		"alter table kr_parent rename constraint kr_p_pkey to kr_parent_pk",
		"alter table kr_child rename constraint kr_c_pid_fkey to kr_child_parent_fk",
		"alter table kr_g rename constraint kr_g_child to kr_g_child_fk",
		"alter table kr_g rename constraint nope to kr_g_x",
		"alter table kr_g rename constraint kr_g_pkey to kr_child",
		"alter table kr_g rename constraint kr_g_child_fk to kr_g_pkey",
		"create table kr_u (id int, a int)",
		"alter table kr_u add constraint kr_u_a_uq unique (a)",
		"alter table kr_u rename constraint kr_u_a_uq to kr_u_a_key",
		"insert into kr_u values (1, 1)",
		"insert into kr_u values (2, 1)",
	)
	sameRows(t, pg, duck,
		`select table_name, column_name, data_type, character_maximum_length, numeric_precision, numeric_scale, column_default
			from information_schema.columns where table_schema = 'public' and table_name like 'kr_%' order by table_name, ordinal_position`,
		`select t.relname, c.conname, c.contype::text, c.confdeltype::text from pg_constraint c join pg_class t on t.oid = c.conrelid
			where t.relname like 'kr_%' and t.relname <> 'kr_u' and c.contype <> 'c' order by 1, 2`, // kr_u's: an index here
		// without the actions, which pg_get_constraintdef leaves out here (Sequelize's sync alter reads them)
		`select c.conname, split_part(pg_get_constraintdef(c.oid), ' ON ', 1) from pg_constraint c join pg_class t on t.oid = c.conrelid
			where t.relname like 'kr_%' and c.contype = 'f' order by 1`,
		`select tablename, indexname from pg_indexes where tablename like 'kr_%' order by 1, 2`,
		`select parent_id, code, note from kr_parent order by 1`,
		`select id, parent_ref, title from kr_child order by 1`,
		`select id, cid, qty from kr_g order by 1`,
		`select pg_get_serial_sequence('kr_parent', 'parent_id'), pg_get_serial_sequence('kr_child', 'id')`)
}

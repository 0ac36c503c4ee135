package pgwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestSetvalAsPostgreSQL: setval as pg_dump's restore, Django's sequence reset and Rails'
// reset_pk_sequence! send it, on the embedded DuckDB as on PostgreSQL 15 (pgx, simple and
// extended protocol): the value answered and its column's name, the next value a serial column
// and a sequence give afterwards, currval, is_called false, a sequence set back, out of bounds
// (22003), a missing one (42P01), a transaction's rollback that does not undo it.
func TestSetvalAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "setval").URL())
	simple := pgx.QueryExecModeSimpleProtocol
	sameAnswers(t, pg, duck, outcome, []oracleStep{
		{"create sequence sv_q", []any{simple}},
		{"select nextval('sv_q'), nextval('sv_q'), nextval('sv_q')", nil},
		{"select setval('sv_q', 10)", nil},
		{"select currval('sv_q')", nil},
		{"select nextval('sv_q')", nil},
		{"select setval('sv_q', 20, false)", nil},
		{"select currval('sv_q')", nil}, // the value nextval gave last, still
		{"select nextval('sv_q'), currval('sv_q')", nil},
		{"select currval('sv_q')", nil},
		{"select setval('sv_q', $1)", []any{int64(30)}},
		{"select nextval('sv_q')", nil},
		{"select setval('sv_q', 5)", nil}, // back: a sequence no default takes values from
		{"select pg_catalog.currval('sv_q')", nil},
		{"select nextval('sv_q')", nil},
		{"select setval('sv_q', 3, false)", nil}, // back, not called
		{"select currval('public.sv_q') as c", nil},
		{"select nextval('sv_q')", nil},
		{"select currval('sv_q')", nil},
		{"select setval('sv_q', 2)", nil},        // back: created again, nothing taken since
		{"select setval('sv_q', 2, false)", nil}, // back, not called: currval is still setval's
		{"select currval('sv_q')", nil},
		{"create sequence sv_fresh", []any{simple}},
		{"select setval('sv_fresh', 7, false)", nil}, // nothing taken yet
		{"select currval('sv_fresh')", nil},
		{"select nextval('sv_fresh')", nil},
		{"select currval('sv_fresh')", nil},
		{"select setval('sv_q', 0)", nil},
		{"select setval('sv_nope', 3)", nil},
		{"create table sv_t (id serial primary key, v text)", []any{simple}},
		{"insert into sv_t (id, v) values (1, 'a'), (2, 'b'), (3, 'c')", nil},
		// pg_dump's restore
		{"SELECT pg_catalog.setval('public.sv_t_id_seq', 3, true);", []any{simple}},
		{"insert into sv_t (v) values ('d') returning id", nil},
		{"insert into sv_t (id, v) values (7, 'e')", nil},
		// Django's sequence reset
		{`SELECT setval(pg_get_serial_sequence('"sv_t"','id'), coalesce(max("id"), 1), max("id") IS NOT null) FROM "sv_t";`, []any{simple}},
		{"insert into sv_t (v) values ('f') returning id", nil},
		// Rails' reset_pk_sequence!
		{`SELECT setval('"public"."sv_t_id_seq"', (SELECT COALESCE(MAX("id")+(SELECT increment_by FROM pg_sequences WHERE schemaname='public' AND sequencename='sv_t_id_seq'), (SELECT min_value FROM pg_sequences WHERE schemaname='public' AND sequencename='sv_t_id_seq')) FROM "public"."sv_t"), false)`, nil},
		{"insert into sv_t (v) values ('g') returning id", nil},
		{"select setval('public.sv_t_id_seq'::regclass, 40) as moved", nil},
		{"select setval($1::text, $2::bigint, $3::boolean)", []any{"sv_t_id_seq", int64(50), false}},
		{"insert into sv_t (v) values ('h') returning id", nil},
		{"begin", nil},
		{"select setval('sv_q', 100)", nil},
		{"rollback", nil},
		{"select nextval('sv_q')", nil},
		{"select id, v from sv_t order by id", nil},
	}...)
}

// TestSetvalBackAsPostgreSQL: setval back on a sequence a serial column's default takes values
// from, its table referenced by another's key (Django's sequence reset after a flush, a fixture's
// lower ids): the table and its family are created again around the sequence, rows, keys and
// indexes kept, and the next ids are PostgreSQL's (pgx).
func TestSetvalBackAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "setvalback").URL())
	for _, sql := range []string{
		"create table sb_p (id serial primary key, code varchar(8) unique)",
		"create table sb_c (id bigserial primary key, pid int references sb_p on delete cascade, v text)",
		"create index sb_c_v on sb_c (v)",
		"insert into sb_p (code) values ('a'), ('b'), ('c'), ('d')",
		"insert into sb_c (pid, v) values (1, 'x'), (2, 'y')",
		"delete from sb_p where id > 2",
		`SELECT setval(pg_get_serial_sequence('"sb_p"','id'), coalesce(max("id"), 1), max("id") IS NOT null) FROM "sb_p"`,
		"insert into sb_p (code) values ('e') returning id",
		"delete from sb_c",
		"select setval('sb_c_id_seq', 1, false)",
		"insert into sb_c (pid, v) values (3, 'z') returning id",
		"insert into sb_c (pid, v) values (9, 'orphan')",
		"insert into sb_p (code) values ('a')",
		"delete from sb_p where id = 3",
		"select id, code from sb_p order by id",
		"select id, pid, v from sb_c order by id",
		"select indexname from pg_indexes where tablename like 'sb_%' order by 1",
		"select column_name, data_type, character_maximum_length from information_schema.columns where table_name = 'sb_p' order by ordinal_position",
	} {
		sameAnswers(t, pg, duck, namedOutcome, oracleStep{sql, []any{pgx.QueryExecModeSimpleProtocol}})
	}
}

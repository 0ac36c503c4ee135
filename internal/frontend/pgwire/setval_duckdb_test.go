package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestSetvalAsPostgreSQL: setval as pg_dump's restore, Django's sequence reset and Rails'
// reset_pk_sequence! send it, on the embedded DuckDB as on PostgreSQL 15 (pgx, simple and
// extended protocol): the value answered and its column's name, the next value a serial column
// and a sequence give afterwards, currval, is_called false, a sequence set back, out of bounds
// (22003), a missing one (42P01), a transaction's rollback that does not undo it.
func TestSetvalAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "setval").URL())
	ctx := context.Background()
	answer := func(c *pgx.Conn, sql string, args ...any) string {
		var pe *pgconn.PgError
		rows, err := c.Query(ctx, sql, args...)
		if errors.As(err, &pe) {
			return "error " + pe.Code
		} else if err != nil {
			return "error " + err.Error()
		}
		defer rows.Close()
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		out := []string{strings.Join(names, ",")}
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return "error " + err.Error()
			}
			out = append(out, fmt.Sprint(v...))
		}
		if err := rows.Err(); errors.As(err, &pe) {
			return "error " + pe.Code
		} else if err != nil {
			return "error " + err.Error()
		}
		if tag := rows.CommandTag().String(); len(names) == 0 {
			return tag
		}
		return strings.Join(out, " ")
	}
	simple := pgx.QueryExecModeSimpleProtocol
	steps := []struct {
		sql  string
		args []any
	}{
		{"create sequence sv_q", []any{simple}},
		{"select nextval('sv_q'), nextval('sv_q'), nextval('sv_q')", nil},
		{"select setval('sv_q', 10)", nil},
		{"select currval('sv_q')", nil},
		{"select nextval('sv_q')", nil},
		{"select setval('sv_q', 20, false)", nil},
		{"select nextval('sv_q')", nil},
		{"select setval('sv_q', $1)", []any{int64(30)}},
		{"select nextval('sv_q')", nil},
		{"select setval('sv_q', 5)", nil}, // back: a sequence no default takes values from
		{"select nextval('sv_q')", nil},
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
	}
	for _, s := range steps {
		want, got := answer(pg, s.sql, s.args...), answer(duck, s.sql, s.args...)
		if want != got {
			t.Errorf("%s %v\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, s.args, want, got)
		}
	}
}

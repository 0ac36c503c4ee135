package pgwire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestCurrvalPerSessionAsPostgreSQL: currval and lastval are each client session's, as on
// PostgreSQL 15, for two clients interleaving their statements on one DuckDB (pooled between
// statements, and in transactions): an explicit nextval's value, a serial column's DEFAULT, a
// multi-row INSERT, setval, an INSERT with an explicit id (which takes nothing), the parent's
// currval in the child's INSERT, 55000 before the session took a value, the extended protocol,
// the sequence named by a bound parameter (currval($1), nextval($1)), INSERT ... RETURNING and
// COPY FROM into a serial table.
func TestCurrvalPerSessionAsPostgreSQL(t *testing.T) {
	pgURL, duck := pgtest.NewDatabase(t), memoryDuckProxy(t, "sessionseq")
	pg := []*pgx.Conn{connect(t, pgURL), connect(t, pgURL)}
	dk := []*pgx.Conn{connect(t, duck.URL()), connect(t, duck.URL())}
	execBoth(t, pg[0], dk[0],
		`create sequence ss_s`,
		`create table ss_t (id serial primary key, x int)`,
		`create table ss_child (id serial primary key, parent int, note text)`)
	simple := pgx.QueryExecModeSimpleProtocol
	steps := []struct {
		client int
		sql    string
		args   []any
	}{
		{0, "select currval('ss_s')", nil},
		{0, "select lastval()", []any{simple}},
		{0, "select nextval('ss_s')", nil},
		{1, "select nextval('ss_s')", []any{simple}},
		{0, "select currval('ss_s')", nil},
		{1, "select currval('ss_s')", []any{simple}},
		{0, "select lastval()", nil},
		{0, "insert into ss_t (x) values (10)", nil},
		{1, "insert into ss_t (x) values (20), (21)", []any{simple}},
		{0, "select currval('ss_t_id_seq'), lastval()", nil},
		{1, "select currval('public.ss_t_id_seq'::regclass), lastval()", []any{simple}},
		{0, "insert into ss_child (parent, note) values (currval('ss_t_id_seq'), $1)", []any{"a"}},
		{1, "insert into ss_child (parent, note) values (currval('ss_t_id_seq'), 'b')", []any{simple}},
		{0, "select lastval(), currval('ss_child_id_seq')", nil},
		{1, "begin", nil},
		{1, "insert into ss_t (x) values (30)", nil},
		{0, "insert into ss_t (x) values (40)", nil},
		{1, "select currval('ss_t_id_seq')", nil},
		{1, "select nextval('ss_s'), currval('ss_s')", nil},
		{1, "commit", nil},
		{0, "select currval('ss_t_id_seq'), currval('ss_s')", nil},
		{1, "select setval('ss_s', 50)", nil},
		{1, "select currval('ss_s'), lastval()", nil},
		{0, "select currval('ss_s')", nil},
		{0, "insert into ss_t (id, x) values (100, 1)", nil},
		{0, "select currval('ss_t_id_seq'), lastval()", nil},
		{0, "select nextval('ss_s') from generate_series(1, 3)", nil},
		{0, "select currval('ss_s')", nil},
		{1, "select currval('ss_child_id_seq')", nil},
		// the sequence named by a parameter
		{0, "select currval($1)", []any{"ss_s"}},
		{1, "select currval($1::regclass), lastval()", []any{"public.ss_t_id_seq"}},
		{1, "select currval($1)", []any{"ss_nope_seq"}},
		{0, "select nextval($1)", []any{"ss_s"}},
		{1, "select nextval($1::regclass)", []any{"ss_s"}},
		{0, "select currval($1), lastval()", []any{"ss_s"}},
		{1, "select currval('ss_s'), lastval()", nil},
		// INSERT ... RETURNING: the values its DEFAULTs took are the session's too
		{0, "insert into ss_t (x) values (50) returning id", nil},
		{1, "insert into ss_t (x) values (51), (52) returning id, x", []any{simple}},
		{0, "select currval('ss_t_id_seq'), lastval()", nil},
		{1, "select currval('ss_t_id_seq'), lastval()", nil},
		{1, "begin", nil},
		{1, "insert into ss_child (parent, note) values (currval('ss_t_id_seq'), 'c') returning id, parent", nil},
		{0, "insert into ss_child (parent, note) values (1, 'd') returning id", nil},
		{1, "select currval('ss_child_id_seq'), lastval()", nil},
		{1, "commit", nil},
	}
	for _, s := range steps {
		want, got := outcome(pg[s.client], s.sql, s.args...), outcome(dk[s.client], s.sql, s.args...)
		if want != got {
			t.Errorf("client %d: %s %v\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.client, s.sql, s.args, want, got)
		}
	}
	// COPY FROM into a serial table, outside a transaction and in one
	for _, c := range []*pgx.Conn{pg[1], dk[1]} {
		if _, err := c.PgConn().CopyFrom(context.Background(), strings.NewReader("60\n61\n62\n"), "copy ss_t (x) from stdin"); err != nil {
			t.Fatalf("copy: %v", err)
		}
	}
	sameAnswers(t, pg[1], dk[1], outcome, oracleStep{"select currval('ss_t_id_seq'), lastval()", nil})
	sameAnswers(t, pg[0], dk[0], outcome, oracleStep{"select currval('ss_t_id_seq'), lastval()", nil})
	for _, c := range []*pgx.Conn{pg[0], dk[0]} {
		tx, err := c.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Conn().PgConn().CopyFrom(context.Background(), strings.NewReader("7\tx\n"), "copy ss_child (parent, note) from stdin"); err != nil {
			t.Fatalf("copy: %v", err)
		}
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	sameAnswers(t, pg[0], dk[0], outcome, oracleStep{"select currval('ss_child_id_seq'), lastval()", nil})
	sameRows(t, pg[0], dk[0], "select id, x from ss_t order by id", "select id, parent, note from ss_child order by id")
}

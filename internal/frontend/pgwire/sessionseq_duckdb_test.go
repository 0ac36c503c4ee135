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

// outcome is what a client reads of a statement: the columns' names and types and the rows,
// or its command tag, or "error " and its SQLSTATE.
func outcome(c *pgx.Conn, sql string, args ...any) string {
	var pe *pgconn.PgError
	rows, err := c.Query(context.Background(), sql, args...)
	if errors.As(err, &pe) {
		return "error " + pe.Code
	} else if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	var out []string
	for _, f := range rows.FieldDescriptions() {
		out = append(out, fmt.Sprintf("%s:%d", f.Name, f.DataTypeOID))
	}
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
	if len(rows.FieldDescriptions()) == 0 {
		return rows.CommandTag().String()
	}
	return strings.Join(out, " ")
}

// TestCurrvalPerSessionAsPostgreSQL: currval and lastval are each client session's, as on
// PostgreSQL 15, for two clients interleaving their statements on one DuckDB (pooled between
// statements, and in transactions): an explicit nextval's value, a serial column's DEFAULT, a
// multi-row INSERT, setval, an INSERT with an explicit id (which takes nothing), the parent's
// currval in the child's INSERT, 55000 before the session took a value, the extended protocol.
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
	}
	for _, s := range steps {
		want, got := outcome(pg[s.client], s.sql, s.args...), outcome(dk[s.client], s.sql, s.args...)
		if want != got {
			t.Errorf("client %d: %s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.client, s.sql, want, got)
		}
	}
	sameRows(t, pg[0], dk[0], "select id, x from ss_t order by id", "select id, parent, note from ss_child order by id")
}

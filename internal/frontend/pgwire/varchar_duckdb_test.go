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

// fieldsText is each result column of sql as a client reads RowDescription: name, type OID and
// type modifier, then the rows; mode is pgx's (the simple protocol, or Describe of a prepared
// statement).
func fieldsText(c *pgx.Conn, mode pgx.QueryExecMode, sql string, args ...any) string {
	rows, err := c.Query(context.Background(), sql, append([]any{mode}, args...)...)
	if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	var out []string
	for _, f := range rows.FieldDescriptions() {
		out = append(out, fmt.Sprintf("%s:%d(%d)", f.Name, f.DataTypeOID, f.TypeModifier))
	}
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return "error " + err.Error()
		}
		out = append(out, fmt.Sprintf("%q", v))
	}
	if err := rows.Err(); err != nil {
		return "error " + err.Error()
	}
	return strings.Join(out, " ")
}

// TestVarcharTypmodAsPostgreSQL: a SELECT of a table's varchar(n), char(n), varchar and text
// columns describes them as PostgreSQL does (1043 with typmod n+4, 1042, ...), what JDBC's
// getPrecision and psycopg's cursor.description read.
func TestVarcharTypmodAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "vctypmod").URL())
	execBoth(t, pg, duck, "create table vt (id int primary key, v varchar(5), c char(3), u varchar, x text, n numeric(7,2), \"Mixed\" varchar(10))",
		"insert into vt values (1, 'ab', 'x', 'u', 't', 1.5, 'm')")
	same := func(queries ...string) {
		t.Helper()
		for _, q := range queries {
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
				if want, got := fieldsText(pg, mode, q), fieldsText(duck, mode, q); want != got {
					t.Errorf("%s (%v)\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", q, mode, want, got)
				}
			}
		}
	}
	same("select * from vt",
		"select v, c, u, x from vt where id = 1",
		"select v as w, upper(v), c || 'z', \"Mixed\" from vt",
		"select t.v, t.c from vt t",
		"select v from public.vt order by id limit 1",
		"select v::text, c from vt")
	// what the engine kept of the table follows its changes: a type altered, a column added,
	// the table created again; and a session's transaction sees its own
	execBoth(t, pg, duck, "alter table vt alter column v type varchar(8)", "alter table vt add column a varchar(3)")
	same("select v, a from vt")
	execBoth(t, pg, duck, "drop table vt", "create table vt (v char(2), w varchar(1))", "insert into vt values ('a', 'b')")
	same("select * from vt")
	execBoth(t, pg, duck, "begin", "create table vt2 (s varchar(4))", "insert into vt2 values ('q')")
	same("select * from vt2", "select * from vt")
	execBoth(t, pg, duck, "rollback")
}

// TestVarcharLengthAsPostgreSQL: a value longer than its varchar(n) or char(n) column is
// PostgreSQL's 22001 `value too long for type character varying(n)` on every write: INSERT (a
// literal, a parameter, several rows), UPDATE, INSERT ... SELECT, an upsert's update, COPY
// FROM; before a violated CHECK of the same row, as PostgreSQL fits values first; characters,
// not bytes, counted; the length checks appear in no catalog.
func TestVarcharLengthAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "vclength").URL())
	execBoth(t, pg, duck, "create table vl (id int primary key, v varchar(5), c char(3) check (c <> 'zz'), n int check (n > 0), t text)",
		"create table vs (s varchar(10))", "insert into vl values (1, 'abc', 'x', 1, 't')", "insert into vs values ('abcdefgh')")
	steps := []oracleStep{
		{"insert into vl values (2, 'abcdef', 'x', 1, 't')", nil},
		{"insert into vl values (2, 'abcde', 'xyzw', 1, 't')", nil},
		{"insert into vl values (2, 'éééééé', 'x', 1, 't')", nil},
		{"insert into vl values (2, 'ééééé', 'ééé', 1, 't')", nil},
		{"insert into vl values ($1, $2, $3, 1, 't')", []any{3, "abcdefg", "x"}},
		{"insert into vl values (4, 'a', 'b', 1, 't'), (5, 'abcdefg', 'b', 1, 't')", nil},
		{"insert into vl values (6, 'abcdefg', 'zz', -1, 't')", nil},
		{"insert into vl values (6, 'abc', 'zz', 1, 't')", nil},
		{"insert into vl values (6, 'abc', 'z', -1, 't')", nil},
		{"update vl set v = v || 'xyz' where id = 1", nil},
		{"update vl set c = $1 where id = 1", []any{"long"}},
		{"insert into vl (id, v) select 7, s from vs", nil},
		{"insert into vl values (1, 'a', 'b', 1, 't') on conflict (id) do update set v = 'toolong'", nil},
		{"insert into vl values (8, null, null, null, repeat('x', 100))", nil},
	}
	for _, s := range steps {
		if want, got := checkError(pg, s.sql, s.args...), checkError(duck, s.sql, s.args...); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, want, got)
		}
	}
	for _, data := range []string{"9\tabcdefgh\tx\t1\tt\n", "9\tab\tx\t0\tt\n", "9\tab\tx\t1\tt\n"} {
		var outcome [2]string
		for i, c := range []*pgx.Conn{pg, duck} {
			tag, err := c.PgConn().CopyFrom(context.Background(), strings.NewReader(data), "copy vl from stdin")
			outcome[i] = tag.String()
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				outcome[i] = pe.Code + " " + pe.Message
			} else if err != nil {
				outcome[i] = err.Error()
			}
		}
		if outcome[0] != outcome[1] {
			t.Errorf("copy vl from stdin: %q\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", data, outcome[0], outcome[1])
		}
	}
	sameRows(t, pg, duck, "select id, v, c, n, t from vl order by id",
		"select conname, contype::text from pg_constraint where conrelid = 'vl'::regclass order by conname",
		"select constraint_name, constraint_type from information_schema.table_constraints where table_name = 'vl' and constraint_name not like '%not_null' order by 1",
		"select constraint_name from information_schema.check_constraints where constraint_name like 'vl%' and constraint_name not like '%not_null' order by 1")
	// ALTER TABLE ADD CHECK's validation of the rows there, named or not; the varchar's checks kept
	for _, s := range []string{"alter table vl add constraint vl_short check (length(t) < 50)", "alter table vl add check (id < 5)",
		"alter table vl add check (length(t) < 200)", "insert into vl values (10, 'abcdefgh', 'x', 1, 't')",
		// a type changed: the new length holds (Django's AlterField of max_length)
		"alter table vl alter column v type varchar(8)", "insert into vl values (10, 'abcdefgh', 'x', 1, 't')",
		"insert into vl values (11, 'abcdefghi', 'x', 1, 't')", "alter table vl alter column v type varchar(3)",
		"alter table vl alter column c type varchar(1)", "alter table vl alter column c type text",
		"insert into vl values (11, 'abcdefgh', 'xxxxxxxx', 1, 't')", "alter table vl alter column t type varchar(2)",
		"alter table vl alter column t type varchar(300)", "insert into vl values (12, 'a', 'b', 1, repeat('t', 301))",
		// a column dropped from a table with an index (created again without it: its length
		// check goes with it; Django's contenttypes migration drops django_content_type.name)
		"create table vd (id int primary key, name varchar(100) not null, s varchar(2))", "insert into vd values (1, 'n', 'ab')",
		"alter table vd drop column name cascade", "insert into vd values (2, 'abc')", "insert into vd values (2, 'ab')"} {
		if want, got := checkError(pg, s), checkError(duck, s); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s, want, got)
		}
	}
	sameRows(t, pg, duck, "select * from vd order by id", "select id, v, c, t from vl order by id")
}

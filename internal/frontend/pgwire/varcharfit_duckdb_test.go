package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// castValues is a query's rows, each value as fmt.Sprint writes it, or the error's SQLSTATE
// (the extended protocol: a parameter stays one).
func castValues(c *pgx.Conn, sql string, args ...any) string {
	rows, err := c.Query(context.Background(), sql, args...)
	if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	var out []string
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

// TestVarcharFitAsPostgreSQL: a value longer than its varchar(n) or char(n) column by trailing
// spaces only is cut to n characters without an error, as PostgreSQL's (INSERT, UPDATE, an
// upsert's update; literals and parameters; RETURNING and what is read back, compared with =);
// a constant too long is 22001 even when no row is written; an explicit cast cuts (literals,
// parameters, columns, expressions, CAST( AS ), named as PostgreSQL names it); a column added
// by ALTER TABLE ADD COLUMN varchar(n) is checked, on a table with an index too; a value
// INSERT ... SELECT stores longer by spaces is read cut.
func TestVarcharFitAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "vcfit").URL())
	execBoth(t, pg, duck, "create table vf (id int primary key, v varchar(3), c char(3), t text)",
		"create table vfi (id int primary key, name text)", "create index vfi_name on vfi (name)", "insert into vfi values (1, 'a')")
	steps := []oracleStep{
		{"insert into vf values (1, 'abc   ', 'ab    ', 'x  ')", nil},
		{"insert into vf (id, v, c) values (2, $1, $2)", []any{"é  ", "xyz "}},
		{"insert into vf as f (c, id, v) values ('q   ', 3, 'a'), ('r', 4, 'bb    ')", nil},
		{"insert into vf values (5, 'abcd', 'x', 'x')", nil},
		{"insert into vf values (5, 'ab', 'abc d', 'x')", nil},
		{"insert into vf values (5, $1, 'x', 'x')", []any{"abcd"}},
		{"update vf set v = 'xy     ' where id = 1", nil},
		{"update vf set v = $1, c = 'z  ' where id = $2", []any{"k    ", 2}},
		{"update vf set v = 'abcdef' where id = 99", nil},
		{"update vf set v = 'abcdef' where false", nil},
		{"update vf set v = $1 where id = 99", []any{"abcdef"}},
		{"update vf set \"v\" = 'ww   ' where id = 3", nil},
		{"insert into vf values (3, 'a', 'b', 'c') on conflict (id) do update set v = 'upd  '", nil},
		{"insert into vf values (3, 'a', 'b', 'c') on conflict (id) do update set v = 'update'", nil},
		// a column added: its length checked (22001), its trailing spaces cut
		{"alter table vf add column d varchar(2)", nil},
		{"update vf set d = 'abc'", nil},
		{"update vf set d = 'ab   ' where id = 1", nil},
		{"insert into vf (id, d) values (7, 'xyz')", nil},
		{"update vf set d = t || 'yz' where id = 1", nil},
		{"insert into vf (id, d) select 7, 'x' || 'yz'", nil},
		{"alter table vfi add column s varchar(2) default 'ab'", nil},
		{"insert into vfi values (2, 'b', 'abc')", nil},
		{"insert into vfi values (2, 'b', 'c   ')", nil},
		{"alter table vfi add column u char(1)", nil},
		{"insert into vfi values (3, 'c', 'c', 'uu')", nil},
		// an expression's value is stored whole, and read cut
		{"insert into vfi (id, name, s) select 4, 'd', 'x' || '    '", nil},
	}
	for _, s := range steps {
		if want, got := checkError(pg, s.sql, s.args...), checkError(duck, s.sql, s.args...); want != got {
			t.Errorf("%s %q\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", s.sql, s.args, want, got)
		}
	}
	sameAnswers(t, pg, duck, namedOutcome,
		oracleStep{"update vf set v = 'r  ' where id = 4 returning id, v, length(v) as n", nil},
		oracleStep{"insert into vf (id, v) values (8, $1) returning v, v || '|' as w", []any{"ok   "}},
		oracleStep{"select id, v, length(v), c, t, d from vf order by id", nil},
		oracleStep{"select id from vf where v = 'xy' or v = 'k' or v = 'ww' or v = 'upd'", nil},
		oracleStep{"select * from vfi order by id", nil},
		// casts: named as PostgreSQL names them where DuckDB's parse tells (a column, a function)
		oracleStep{"select v::varchar(1), upper(v)::varchar(1), vf.v::character varying(1), cast(v as varchar(1)) as x, " +
			"cast(id as character varying(1)), v::char, v::text::varchar(1), (v || 'zzz')::varchar(4) as w from vf where id = 1", nil},
	)
	for _, q := range []oracleStep{
		{"select 'abcdef'::varchar(3), cast('abcdef' as varchar(3)), 'abcdef'::character varying(2), 'ééé'::varchar(2)", nil},
		{"select 'abcdef'::char(2), 'xyz'::bpchar, 'xyz'::varchar, 'x''yz'::varchar(2), 'ab'::char(4) || '|'", nil},
		{"select $1::varchar(2), cast($1 as varchar(1)), $2::text::varchar(1)", []any{"xyz", "uvw"}},
		{"select 12345::varchar(3), cast(12.5 as varchar(2)), null::varchar(1), coalesce(null, 'abc')::varchar(2)", nil},
		{"select count(*) from vf where v::varchar(1) = 'x'", nil},
		{"select 'abc'::character varying::varchar(2), now()::timestamp with time zone::varchar(2) = '20'", nil},
	} {
		if want, got := castValues(pg, q.sql, q.args...), castValues(duck, q.sql, q.args...); want != got {
			t.Errorf("%s %q\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", q.sql, q.args, want, got)
		}
	}
}

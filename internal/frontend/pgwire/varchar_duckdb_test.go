package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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

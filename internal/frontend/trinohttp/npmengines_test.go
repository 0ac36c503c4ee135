package trinohttp

import (
	"fmt"
	"testing"
)

// TestTrinoNullsFunctionsAndDivisionThroughNPMOnEveryEngine: the npm trino-client gets Trino's
// answers on PostgreSQL, MariaDB and DuckDB, as trino-go-client does (nulls_test.go,
// division_test.go, dailyfuncs_test.go): NULLs sorted last in either direction unless NULLS
// FIRST (by column, position and alias), the integer division of integer columns, date_trunc,
// format_datetime and try_cast.
func TestTrinoNullsFunctionsAndDivisionThroughNPMOnEveryEngine(t *testing.T) {
	servers := trinoServersOnEveryEngine(t)
	for _, s := range servers {
		mustExec(t, s.db, `create table nq (id integer, a integer, b integer, ts timestamp(3))`)
		mustExec(t, s.db, `insert into nq values (1, -7, 2, timestamp '2024-05-17 13:45:56.789'), (2, null, 2, null), (3, 7, -2, null), (4, 3, null, null)`)
	}
	want := map[string]string{
		"asc":      "[[1] [4] [3] [2]]",
		"desc":     "[[3] [4] [1] [2]]",
		"position": "[[2 <nil>] [4 3] [3 7]]",
		"alias":    "[[1 1] [2 1] [3 -1] [4 <nil>]]",
		"divide":   "[[1 -3 -3 1] [2 <nil> <nil> <nil>] [3 -3 3 -1] [4 <nil> 1 <nil>]]",
		"daily":    "[[2024-05-01 2024-05-17T13:45 <nil> 12]]",
	}
	steps := []npmStep{
		{Name: "asc", SQL: `select id from nq order by a, id`},
		{Name: "desc", SQL: `select id from nq order by a desc, id`},
		{Name: "position", SQL: `select id, a from nq where id > 1 order by 2 nulls first, id`},
		{Name: "alias", SQL: `select id, b / 2 x from nq order by x desc, id`},
		{Name: "divide", SQL: `select id, a / b, a / 2, (a + b) / -4 from nq order by id`},
		{Name: "daily", SQL: `select date_trunc('month', date '2024-05-17'), format_datetime(ts, 'yyyy-MM-dd''T''HH:mm'), try_cast('x' as integer), ` +
			`try_cast('12' as integer) from nq where id = 1`},
	}
	for name, s := range servers {
		got := runNPMIn(t, s.addr, "alice", s.catalog, s.schema, steps...)
		for _, step := range steps {
			o := got[step.Name]
			if o.OK == nil {
				t.Errorf("%s: %s: %+v", name, step.SQL, o.Error)
				continue
			}
			if rows := fmt.Sprint(o.OK.Rows); rows != want[step.Name] {
				t.Errorf("%s: %s: %s, want %s", name, step.SQL, rows, want[step.Name])
			}
		}
	}
}

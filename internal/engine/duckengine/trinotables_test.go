package duckengine

import (
	"fmt"
	"testing"
)

// TestSingleTableSelects: a SELECT of one table's columns names the table and each item's
// column (* for a star, "" for an expression); a join, a subquery, a WITH, a set operation or
// a grouping is not read.
func TestSingleTableSelects(t *testing.T) {
	for sqlText, want := range map[string]string{
		"select * from t": "[t] [*]",
		"SELECT v, t.tz AS z, c x, n + 1 FROM s.t WHERE n = 1": "[s t] [v tz c ]",
		`select "V", t.* from cat.s."T" t order by 1 limit 2;`: "[cat s T] [V *]",
		"select distinct v from t as q offset 1":               "[t] [v]",
		"select current_date, count(*) from t":                 "[t] [ ]",
		"select * from t join u on t.a = u.a":                  "not read",
		"select * from t, u":                                   "not read",
		"select * from (select 1) x":                           "not read",
		"select * from unnest(array[1])":                       "not read",
		"with t as (select 1 v) select v from t":               "not read",
		"select v from t union all select v from u":            "not read",
		"select v from t group by v":                           "not read",
		"select 1":                                             "not read",
	} {
		table, items, ok := singleTableSelect(sqlText)
		got := fmt.Sprint(table, " ", items)
		if !ok {
			got = "not read"
		}
		if got != want {
			t.Errorf("%s: %s, want %s", sqlText, got, want)
		}
	}
}

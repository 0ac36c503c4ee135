package pgengine

import "testing"

// TestMySQLNullsOrderOfNotNullColumns: a sort key that is a NOT NULL column of the statement's
// one table keeps PostgreSQL's order (no NULLS); any other key, and any key of a statement
// that joins, unions, reads a subquery or names another item as the column, gets MariaDB's.
func TestMySQLNullsOrderOfNotNullColumns(t *testing.T) {
	asked := map[string]int{}
	lookup := notNullLookup{schema: "db", columns: func(table string) map[string]bool {
		asked[table]++
		if table == `"db"."t"` || table == `"s"."t"` {
			return map[string]bool{"id": true, "n": true, "Q": true}
		}
		return nil
	}}
	for in, want := range map[string]string{ //determinism:ok each text is checked alone
		"select * from t order by id limit 10":                             "select * from t order by id limit 10",
		"select id, v from t where v > 1 order by id desc, v":              "select id, v from t where v > 1 order by id desc, v NULLS FIRST",
		"select * from t x order by x.id, n asc":                           "select * from t x order by x.id, n asc",
		"select * from t as x order by t.id":                               "select * from t as x order by t.id NULLS FIRST",
		`select * from s.t order by "Q", q`:                                `select * from s.t order by "Q", q NULLS FIRST`,
		"explain select * from t order by id":                              "explain select * from t order by id",
		"select v as id from t order by id":                                "select v as id from t order by id NULLS FIRST",
		"select t.id, v id from t order by id":                             "select t.id, v id from t order by id NULLS FIRST",
		"select t.id, v from t order by id":                                "select t.id, v from t order by id",
		"select * from t left join u on t.id = u.id order by id":           "select * from t left join u on t.id = u.id order by id NULLS FIRST",
		"select * from t, u order by id":                                   "select * from t, u order by id NULLS FIRST",
		"select * from (select id from t) t order by id":                   "select * from (select id from t) t order by id NULLS FIRST",
		"select id from t union select id from t order by id":              "select id from t union select id from t order by id NULLS FIRST",
		"select id, count(*) from t group by rollup(id) order by id":       "select id, count(*) from t group by rollup(id) order by id NULLS FIRST",
		"select * from u order by id":                                      "select * from u order by id NULLS FIRST",
		"select id, row_number() over (order by n) from t order by id + 0": "select id, row_number() over (order by n) from t order by id + 0 NULLS FIRST",
		"update t set v = 1 order by id":                                   "update t set v = 1 order by id NULLS FIRST",
	} {
		if got := mysqlNullsOrder(in, lookup); got != want {
			t.Errorf("%s:\n got  %s\n want %s", in, got, want)
		}
	}
	if got := mysqlNullsOrder("select * from t order by id", notNullLookup{}); got != "select * from t order by id NULLS FIRST" {
		t.Errorf("without a lookup: %s", got)
	}
}

package pgengine

import "testing"

// TestNotNullGuard: outside a transaction a statement whose sort key was left without NULLS
// because the cache has its column NOT NULL checks the column is NOT NULL still, in its own
// WHERE (the statement's condition kept whole inside parentheses); a statement that left no key
// so, and one inside a transaction, is as it was.
func TestNotNullGuard(t *testing.T) {
	lookup := notNullLookup{schema: "db", guarded: true, columns: func(table string) map[string]bool {
		if table == `"db"."t"` || table == `"db"."it's"` {
			return map[string]bool{"id": true, "n": true}
		}
		return nil
	}}
	const g = `CASE WHEN (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute WHERE attrelid = '"db"."t"'::pg_catalog.regclass AND attnotnull AND attname IN (`
	const e = `THEN true ELSE pg_catalog.current_setting('queryflux.stale_not_null')::pg_catalog.bool END`
	for in, want := range map[string]string{ //determinism:ok each text is checked alone
		"select * from t order by id limit 10":                         "select * from t WHERE " + g + `'id')) = 1 ` + e + " order by id limit 10",
		"select * from t where a = 1 or b = 2 order by id, n desc, a":  "select * from t where " + g + `'id', 'n')) = 2 ` + e + " AND ( a = 1 or b = 2) order by id, n desc, a NULLS FIRST",
		"select * from t x where (a) in (1, 2) order by x.id, id;":     "select * from t x where " + g + `'id')) = 1 ` + e + " AND ( (a) in (1, 2)) order by x.id, id;",
		"select count(*) from t group by n order by n":                 "select count(*) from t WHERE " + g + `'n')) = 1 ` + e + " group by n order by n",
		"select id from t where id > 3 order by null":                  "select id from t where id > 3 ",
		"select * from t order by a":                                   "select * from t order by a NULLS FIRST",
		"select * from t where id > 1 order by id for update":          "select * from t where " + g + `'id')) = 1 ` + e + " AND ( id > 1) order by id for update",
		"select id, row_number() over (order by n) from t order by id": "select id, row_number() over (order by n) from t WHERE " + g + `'n', 'id')) = 2 ` + e + " order by id",
		`select * from "it's" where x = 'a' order by id -- c`:          `select * from "it's" where CASE WHEN (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute WHERE attrelid = '"db"."it''s"'::pg_catalog.regclass AND attnotnull AND attname IN ('id')) = 1 ` + e + " AND ( x = 'a') order by id -- c",
	} {
		if got := mysqlNullsOrder(in, lookup); got != want {
			t.Errorf("%s:\n got  %s\n want %s", in, got, want)
		}
	}
	lookup.guarded = false
	if got := mysqlNullsOrder("select * from t order by id", lookup); got != "select * from t order by id" {
		t.Errorf("in a transaction: %s", got)
	}
}

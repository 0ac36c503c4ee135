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

// TestMySQLBoolAggregates: SUM, AVG, MIN and MAX of a boolean column of the one table a
// statement reads sum the column as an integer (MariaDB's BOOLEAN a TINYINT(1)); the scale the
// frontend rounds AVG to reads it so too; a boolean inside another expression, a column of
// another type, a statement of two tables are left as they are.
func TestMySQLBoolAggregates(t *testing.T) {
	lookup := notNullLookup{schema: "db", booleans: func(table string) map[string]bool {
		if table != `"db"."t"` && table != `"t"` {
			t.Errorf("asked of %s", table)
		}
		return map[string]bool{"ok": true, "Ok": true}
	}}
	for _, c := range []struct{ in, want string }{
		{"select sum(ok), avg(distinct ok), min(t.ok), max( ok ), sum(a) from t",
			"select sum(CAST(ok AS integer)), avg(distinct CAST(ok AS integer)), min(CAST(t.ok AS integer)), max( CAST(ok AS integer) ), sum(a) from t"},
		{"select round(avg(ok), least(max(scale(CAST((ok) AS numeric))) + 4, 38)) from t x where x.id > 1",
			"select round(avg(CAST(ok AS integer)), least(max(scale(CAST((CAST(ok AS integer)) AS numeric))) + 4, 38)) from t x where x.id > 1"},
		{`select sum(ok = true), sum(not ok), sum("Ok"), sum(u.ok), s.sum(ok) from t`,
			`select sum(ok = true), sum(not ok), sum(CAST("Ok" AS integer)), sum(u.ok), s.sum(ok) from t`},
		{"select sum(ok) from t join u on t.id = u.id", "select sum(ok) from t join u on t.id = u.id"},
		{"select sum(ok) from (select ok from t) s", "select sum(ok) from (select ok from t) s"},
		{"select ok from t order by ok", "select ok from t order by ok"},
	} {
		if got := mysqlBoolAggregates(c.in, lookup); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
	lookup.schema = "" // a client in no database: the table the search_path finds
	if got, want := mysqlBoolAggregates("select sum(ok) from t", lookup), "select sum(CAST(ok AS integer)) from t"; got != want {
		t.Errorf("no database: got %s, want %s", got, want)
	}
}

// TestBoolAggregatesLookOnlyAtCalls: a statement that calls no SUM, AVG, MIN or MAX is given back
// without being tokenized (no allocation), whatever words hold those letters ("admin",
// "minute", "summary", a function min_x or x_max); one that calls them, spaced or not, in any
// case, is read.
func TestBoolAggregatesLookOnlyAtCalls(t *testing.T) {
	lookup := notNullLookup{schema: "db", booleans: func(string) map[string]bool { return map[string]bool{"ok": true} }}
	for _, in := range []string{
		"select admin, minute(ts), summary, maxlen from t where avgs > 1",
		"select x_sum(ok), min_x(ok), summax(ok), max2(ok), \"sum\"(ok), t1sum(ok), x$max(ok) from t",
	} {
		if n := testing.AllocsPerRun(20, func() { mysqlBoolAggregates(in, lookup) }); n != 0 {
			t.Errorf("%s: %v allocations, want none (not tokenized)", in, n)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"select SUM (ok), Max\n(ok), min\r\n(ok) from t", "select SUM (CAST(ok AS integer)), Max\n(CAST(ok AS integer)), min\r\n(CAST(ok AS integer)) from t"},
		{"select admin, avg(ok) from t", "select admin, avg(CAST(ok AS integer)) from t"},
	} {
		if got := mysqlBoolAggregates(c.in, lookup); got != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.in, got, c.want)
		}
	}
}

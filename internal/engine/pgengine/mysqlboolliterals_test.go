package pgengine

import "testing"

func TestMySQLBoolLiterals(t *testing.T) {
	lookup := notNullLookup{schema: "db", booleans: func(table string) map[string]bool {
		if table != `"db"."t"` && table != `"s"."t"` {
			return nil
		}
		return map[string]bool{"ok": true, "Ok": true}
	}}
	for _, c := range []struct{ in, want string }{
		{"insert into t (name, ok, n) values ('a', 1, 1), ('b', 0, 0), ('c', 2, (1)), ('d', NULL, 1)",
			"insert into t (name, ok, n) values ('a', true, 1), ('b', false, 0), ('c', true, (1)), ('d', NULL, 1)"},
		{`INSERT IGNORE INTO s.t ("Ok", ok) VALUES (0, 1) ON CONFLICT (id) DO UPDATE SET ok = 0, n = 1`,
			`INSERT IGNORE INTO s.t ("Ok", ok) VALUES (false, true) ON CONFLICT (id) DO UPDATE SET ok = false, n = 1`},
		{"insert into t values (1, 1)", "insert into t values (1, 1)"},
		{"insert into t (ok) select 1", "insert into t (ok) select 1"},
		{"insert into u (ok) values (1)", "insert into u (ok) values (1)"},
		{"update t set ok = 1, n = 1 where ok = 0 and x.ok = 1 and t.ok <> 1 and ok != 01",
			"update t set ok = true, n = 1 where ok = false and x.ok = 1 and t.ok <> true and ok != true"},
		{"update t x set x.ok = 2 where x.ok = 2 or ok = 1 + n or ok = n", "update t x set x.ok = true where x.ok = 2 or ok = 1 + n or ok = n"},
		{"update t set ok = 1 from u where u.id = t.id", "update t set ok = 1 from u where u.id = t.id"},
		{"delete from t where ok = 1 and id in (1, 2)", "delete from t where ok = true and id in (1, 2)"},
		{"select count(*) from t where ok = 1 and (ok = 0 or ok = -1)", "select count(*) from t where ok = true and (ok = false or ok = -1)"},
		{"select * from t join u on u.ok = 1 where ok = 1", "select * from t join u on u.ok = 1 where ok = 1"},
		{"select ok = 1.0, ok = 1e0, ok = '1' from t", "select ok = 1.0, ok = 1e0, ok = '1' from t"},
		{"select id from t where ok <> 0", "select id from t where ok <> false"},
	} {
		if got := mysqlBoolLiterals(c.in, lookup); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

func TestMySQLInsertReturning(t *testing.T) {
	lookup := notNullLookup{schema: "db", generated: func(table string) string {
		if table == `"db"."t"` {
			return "id"
		}
		return ""
	}}
	for _, c := range []struct {
		in, want string
		returns  bool
	}{
		{"insert into t (name, ok) values ('a', 1), ('b', 0);", `insert into t (name, ok) values ('a', 1), ('b', 0) RETURNING "id"`, true},
		{"INSERT INTO t (name) VALUES ('a') ON CONFLICT DO NOTHING", `INSERT INTO t (name) VALUES ('a') ON CONFLICT DO NOTHING RETURNING "id"`, true},
		{"insert into t (id, name) values (7, 'a')", "", false},
		{`insert into t ("id", name) values (7, 'a')`, "", false},
		{"insert into t values (7, 'a')", "", false},
		{"insert into t (name) values ('a') on conflict (name) do update set name = 'b'", "", false},
		{"insert into t (name) values ('a') returning name", "", false},
		{"insert into t (name) select name from u", "", false},
		{"insert into u (name) values ('a')", "", false},
		{"update t set name = 'a'", "", false},
	} {
		got, returns := mysqlInsertReturning(c.in, lookup)
		if !c.returns {
			c.want = c.in
		}
		if got != c.want || returns != c.returns {
			t.Errorf("%s:\n got  %s %v\n want %s %v", c.in, got, returns, c.want, c.returns)
		}
	}
}

// TestMySQLBoolLiteralsSkipsStatementsNamingNoBooleanColumn: a statement that names none of the
// database's boolean columns (`WHERE id = 1` on a database with one) is returned as it is
// without being tokenized or its table looked up, allocating nothing; one naming a boolean
// column still has its literal written.
func TestMySQLBoolLiteralsSkipsStatementsNamingNoBooleanColumn(t *testing.T) {
	var lookups int
	names := newColumnNames([]string{"Active"})
	lookup := notNullLookup{booleans: func(string) map[string]bool { lookups++; return map[string]bool{"Active": true} },
		boolNames: func() *columnNames { return names }}
	const plain = "SELECT id, name FROM users WHERE id = 1"
	if allocs := testing.AllocsPerRun(10, func() { mysqlBoolLiterals(plain, lookup) }); allocs != 0 || lookups != 0 {
		t.Errorf("%s: %v allocations, %d table lookups; want none", plain, allocs, lookups)
	}
	if got, want := mysqlBoolLiterals(`SELECT id FROM users WHERE "Active" = 1`, lookup), `SELECT id FROM users WHERE "Active" = true`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

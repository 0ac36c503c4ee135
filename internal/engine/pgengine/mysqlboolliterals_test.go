package pgengine

import "testing"

func TestMySQLBoolLiterals(t *testing.T) {
	lookup := notNullLookup{schema: "db", booleans: func(table string) map[string]bool {
		if table != `"db"."t"` && table != `"s"."t"` {
			return nil
		}
		return map[string]bool{"ok": true, "Ok": true}
	}, order: func(table string) []string { return []string{"id", "ok", "name"} },
		boolNames: func() *columnNames { return newColumnNames([]string{"ok", "Ok"}) }}
	for _, c := range []struct{ in, want string }{
		{"insert into t (name, ok, n) values ('a', 1, 1), ('b', 0, 0), ('c', 2, (1)), ('d', NULL, 1)",
			"insert into t (name, ok, n) values ('a', true, 1), ('b', false, 0), ('c', true, (1)), ('d', NULL, 1)"},
		{`INSERT IGNORE INTO s.t ("Ok", ok) VALUES (0, 1) ON CONFLICT (id) DO UPDATE SET ok = 0, n = 1`,
			`INSERT IGNORE INTO s.t ("Ok", ok) VALUES (false, true) ON CONFLICT (id) DO UPDATE SET ok = false, n = 1`},
		{"insert into t values (1, 1, 'x'), (0, 0, 'y')", "insert into t values (1, true, 'x'), (0, false, 'y')"},
		{"insert into t(id) values (1)", "insert into t(id) values (1)"},
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
	lookup := notNullLookup{schema: "db", generated: func(table string) generatedColumn {
		if table == `"db"."t"` {
			return generatedColumn{name: "id", pos: 0, seq: "db.t_id_seq"}
		}
		return generatedColumn{}
	}}
	const next = "nextval('db.t_id_seq'::pg_catalog.regclass)"
	for _, c := range []struct {
		in, want string
		rows     string // each row's place: g generated, a given id, ? not known
		ahead    int64
		args     []any
		mode     string
	}{
		{in: "insert into t (name, ok) values ('a', 1), ('b', 0);", want: `insert into t (name, ok) values ('a', 1), ('b', 0) RETURNING "id"`, rows: "gg"},
		{in: "INSERT INTO t (name) VALUES ('a') ON CONFLICT DO NOTHING", want: `INSERT INTO t (name) VALUES ('a') ON CONFLICT DO NOTHING RETURNING "id"`, rows: "g"},
		{in: "insert into t (id, name) values (7, 'a')", want: `insert into t (id, name) values (7, 'a') RETURNING "id"`, rows: "a", ahead: 7},
		{in: `insert into t ("id", name) values (NULL, 'a'), (0, 'b'), (DEFAULT, 'c')`, want: `insert into t ("id", name) values (DEFAULT, 'a'), (DEFAULT, 'b'), (DEFAULT, 'c') RETURNING "id"`, rows: "ggg"},
		{in: "insert into t values (7, 'a'), (null, 'b'), (9, 'c')", want: `insert into t values (7, 'a'), (DEFAULT, 'b'), (9, 'c') RETURNING "id"`, rows: "aga", ahead: 7},
		{in: "insert into t values (0, 'a')", mode: "NO_AUTO_VALUE_ON_ZERO", want: `insert into t values (0, 'a') RETURNING "id"`, rows: "a"},
		{in: "insert into t (name, id) values (lower('A'), 1 + 1)", want: `insert into t (name, id) values (lower('A'), 1 + 1) RETURNING "id"`, rows: "?"},
		{in: "insert into t (name, id) values ('a', $1), ('b', $2), ('c', $3)", args: []any{nil, int64(0), int64(5)},
			want: `insert into t (name, id) values ('a', COALESCE(NULLIF($1::pg_catalog.int8, 0), ` + next + `)), ('b', COALESCE(NULLIF($2::pg_catalog.int8, 0), ` + next + `)), ('c', $3) RETURNING "id"`, rows: "gga"},
		{in: "insert into t (name) values ('a') on conflict (name) do update set name = 'b'"},
		{in: "insert into t (name) values ('a') returning name"},
		{in: "insert into t (name) select name from u"},
		{in: "insert into u (name) values ('a')"},
		{in: "update t set name = 'a'"},
	} {
		got, plan := mysqlInsertReturning(c.in, lookup, c.args, c.mode)
		if c.want == "" {
			c.want = c.in
		}
		rows := ""
		var ahead int64
		if plan != nil {
			for _, p := range plan.rows {
				switch {
				case p.generated:
					rows += "g"
				case p.known:
					rows += "a"
				default:
					rows += "?"
				}
			}
			ahead = plan.ahead
		}
		if got != c.want || rows != c.rows || ahead != c.ahead {
			t.Errorf("%s:\n got  %s %q ahead %d\n want %s %q ahead %d", c.in, got, rows, ahead, c.want, c.rows, c.ahead)
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

// TestMySQLLastInsertID: LAST_INSERT_ID() is the session's value; a qualified name or a call
// with an argument is left.
func TestMySQLLastInsertID(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT LAST_INSERT_ID()":                         "SELECT CAST(42 AS pg_catalog.int8)",
		"select last_insert_id ( ) + 1, last_insert_id()": "select CAST(42 AS pg_catalog.int8) + 1, CAST(42 AS pg_catalog.int8)",
		"select last_insert_id(7)":                        "select last_insert_id(7)",
		"select s.last_insert_id()":                       "select s.last_insert_id()",
		"select 'last_insert_id()'":                       "select 'last_insert_id()'",
	} {
		if got := mysqlLastInsertID(in, 42); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

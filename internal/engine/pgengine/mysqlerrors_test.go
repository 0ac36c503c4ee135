package pgengine

import "testing"

// TestMySQLRefusalParts: the parts of MariaDB's messages read from the client's statement: the
// column as written and its clause (1054), and whether an INSERT leaves a column out (1364).
func TestMySQLRefusalParts(t *testing.T) {
	for _, c := range []struct{ sql, name, written, clause string }{
		{"select NoSuch from t", "nosuch", "NoSuch", "SELECT"},
		{"select a as nosuch, nosuch from t", "nosuch", "nosuch", "SELECT"},
		{"select * from t where f(x) = 1 and `x` > 2", "x", "x", "WHERE"},
		{"select t.x from t", "t.x", "t.x", "SELECT"},
		{"select u.x, t.x from t", "t.x", "t.x", "SELECT"},
		{"select a from t group by x", "x", "x", "GROUP BY"},
		{"select a from t order by a, x", "x", "x", "ORDER BY"},
		{"select a from t join u on t.a = x", "x", "x", "ON"},
		{"select a from x join u on u.a = x", "x", "x", "ON"},
		{"select a from t where a in (select x from u)", "x", "x", "SELECT"},
		{"insert into t (a, x) values (1, 2)", "x", "x", "INSERT INTO"},
		{"insert into t (a) values (x)", "x", "x", "VALUES"},
		{"insert into t (a) values (1) on duplicate key update a = x", "x", "x", "SELECT"},
		{"update t set x = 1", "x", "x", "SET"},
		{"delete from t where x = 1", "x", "x", "WHERE"},
		{"update t set a = 1 where `y` = 1", "x", "x", "SET"},
	} {
		if w, cl := columnClause(c.sql, c.name); w != c.written || cl != c.clause {
			t.Errorf("%s: %q in %q, want %q in %q", c.sql, w, cl, c.written, c.clause)
		}
	}
	for _, c := range []struct {
		sql  string
		left bool
	}{
		{"insert into t (a) values (1)", true}, {"insert into t (a, n) values (1, null)", false}, {"insert into t values (1, null)", false},
		{"insert ignore into s.t (`a`) select 1", true}, {"insert into t (N) values (1)", false}, {"insert into t (a, n) values (1, default)", true},
		{"insert into t (a, n) values (1, 2), (2, DEFAULT)", true}, {"insert into t (a, n) values (1, f(default))", false},
		{"update t set n = null", false}, {"replace into t (a) values (1)", true},
	} {
		if got := insertLeavesOut(c.sql, "n"); got != c.left {
			t.Errorf("%s: leaves n out %v, want %v", c.sql, got, c.left)
		}
	}
}

package mysqlwire

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestPgDivisions(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"select a/b from t", "select a/NULLIF(b, 0) from t"},
		{"select a / 2 from t", "select a / 2 from t"},
		{"select sum(a) / count(b) from t where a % b > 1", "select sum(a) / NULLIF(count(b), 0) from t where a % NULLIF(b, 0) > 1"},
		{"select mod(a, b + 1), mod(a, 3)", "select mod(a, NULLIF(b + 1, 0)), mod(a, 3)"},
		{"select a / (b / c)", "select a / NULLIF((b / NULLIF(c, 0)), 0)"},
		{"select a / ?", "select a / ?"},
		{"select 7 mod -2", "select 7 % -2"},
		{"select 7 div 2", "select CAST(div(CAST((7) AS numeric), NULLIF(CAST((2) AS numeric), 0)) AS bigint)"},
		{"select x * -a div b + 1 from t", "select CAST(div(CAST((x * -a) AS numeric), NULLIF(CAST((b) AS numeric), 0)) AS bigint) + 1 from t"},
		{"update t set a = a div b", "update t set a = CAST(div(CAST((a) AS numeric), CAST((b) AS numeric)) AS bigint)"},
		{"select a div b div c", "select CAST(div(CAST((CAST(div(CAST((a) AS numeric), NULLIF(CAST((b) AS numeric), 0)) AS bigint)) AS numeric), NULLIF(CAST((c) AS numeric), 0)) AS bigint)"},
		{"select t.a div f(b) ^ 2 * 3", "select CAST(div(CAST((t.a) AS numeric), NULLIF(CAST((f(b) ^ 2) AS numeric), 0)) AS bigint) * 3"},
		{"select div, mod from t", "select div, mod from t"},
		{"select a/-b", "select a/-NULLIF(b, 0)"},
		{"select a div mod(a, b)", "select CAST(div(CAST((a) AS numeric), NULLIF(CAST((mod(a, NULLIF(b, 0))) AS numeric), 0)) AS bigint)"},
		{"select mod(a, b) div 2", "select CAST(div(CAST((mod(a, NULLIF(b, 0))) AS numeric), NULLIF(CAST((2) AS numeric), 0)) AS bigint)"},
	} {
		if got := pgDivisions(c.in); got != c.want {
			t.Errorf("pgDivisions(%q)\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

// TestZeroDivisionsInsideMod: MOD(x, 0) whose x divides by zero too is rewritten in text order
// (it panicked: the call's zero was edited before the zeros inside x).
func TestZeroDivisionsInsideMod(t *testing.T) {
	got, perRow := zeroDivisions("select mod(x mod 0 div 0, 0) from t")
	want := "select mod(x mod NULLIF(0, 0) div NULLIF(0, 0), NULLIF(0, 0)) AS `mod(x mod 0 div 0, 0)` from t"
	if got != want || perRow != 3 {
		t.Errorf("got %s (%d), want %s (3)", got, perRow, want)
	}
}

// TestDivisionRewritesTakeAnyText (rapid): select lists of divisions nested in calls, CASEs
// and parentheses, with tokens dropped or added at random (however broken), are rewritten
// without a panic (a panic ends the client's connection), and a text without a division is
// left as it is.
func TestDivisionRewritesTakeAnyText(t *testing.T) {
	operands := []string{"a", "b", "0", "'0'", "2.5", "?", "t.a", "date '2020-01-01'", "-a", "null"}
	ops := []string{"/", "%", "div", "mod", "*", "+", "^", "/-"}
	var expr func(rt *rapid.T, depth int) string
	expr = func(rt *rapid.T, depth int) string {
		if depth == 0 {
			return rapid.SampledFrom(operands).Draw(rt, "operand")
		}
		l, r := expr(rt, depth-1), expr(rt, depth-1)
		switch rapid.IntRange(0, 5).Draw(rt, "form") {
		case 0:
			return "(" + l + ")"
		case 1:
			return "mod(" + l + ", " + r + ")"
		case 2:
			return "case when " + l + " then " + r + " end"
		case 3:
			return rapid.SampledFrom([]string{"coalesce", "if", "sum", "abs"}).Draw(rt, "call") + "(" + l + ", " + r + ")"
		default:
			return l + " " + rapid.SampledFrom(ops).Draw(rt, "op") + " " + r
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		words := strings.Fields("select " + expr(rt, 3) + ", " + expr(rt, 2) + " from t where " + expr(rt, 2))
		for range rapid.IntRange(0, 3).Draw(rt, "breaks") {
			at := rapid.IntRange(0, len(words)-1).Draw(rt, "at")
			if rapid.Bool().Draw(rt, "drop") {
				words = append(words[:at], words[at+1:]...)
			} else {
				words = append(words[:at], append([]string{rapid.SampledFrom([]string{"(", ")", ",", ";", "mod(", "end"}).Draw(rt, "add")}, words[at:]...)...)
			}
		}
		sql := strings.Join(words, " ")
		zeroDivisions(sql)
		pg, counted := pgDivisions(sql), divZeroCounted(sql)
		if counted != "" {
			pgDivisions(counted)
		}
		if !strings.ContainsAny(sql, "/%") && !strings.Contains(sql, "div") && !strings.Contains(sql, "mod") && (pg != sql || counted != "") {
			rt.Fatalf("%q changed without a division: %q, %q", sql, pg, counted)
		}
	})
}

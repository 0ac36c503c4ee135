package pgengine

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestMySQLConcat: a MySQL client's concat calls become PostgreSQL's NULL-propagating
// concatenation, nested ones and their arguments' own parentheses included; what is not a call
// of MariaDB's concat stays.
func TestMySQLConcat(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"select concat(v, $1) from t", "select ('' || (v) || ( $1)) from t"},
		{"select CONCAT('%', $1, '%')", "select ('' || ('%') || ( $1) || ( '%'))"},
		{"select concat(f(a, b), concat(x, 'y'), (1, 2))", "select ('' || (f(a, b)) || ( ('' || (x) || ( 'y'))) || ( (1, 2)))"},
		{"select concat(a[1], b)", "select ('' || (a[1]) || ( b))"},
		{"select concat_ws(',', a, b), concat", "select concat_ws(',', a, b), concat"},
		{"select pg_catalog.concat(a, b)", "select pg_catalog.concat(a, b)"},
		{"select concat()", "select concat()"},
		{"select 'concat(a, b)', \"concat\"", "select 'concat(a, b)', \"concat\""},
		{"select concat(a, b", "select concat(a, b"}, // unclosed: PostgreSQL's error stands
	} {
		if got := mysqlConcat(c.in); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

// TestMySQLConcatOfAnyText: any text keeps every byte outside the concat calls, and the rewrite
// never runs twice over (a text without concat is itself).
func TestMySQLConcatOfAnyText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom([]string{"concat", "CONCAT", "(", ")", ",", " ", "a", "'x'", "$1", "[", "]", ".", "--c\n", "concat_ws"})).Draw(t, "parts")
		in := strings.Join(parts, "")
		out := mysqlConcat(in)
		if !strings.Contains(strings.ToLower(in), "concat") && out != in {
			t.Fatalf("%q became %q", in, out)
		}
		if strings.Count(out, "(")-strings.Count(out, ")") != strings.Count(in, "(")-strings.Count(in, ")") {
			t.Fatalf("%q became %q: parentheses", in, out)
		}
	})
}

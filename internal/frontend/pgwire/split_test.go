package pgwire

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestSplitStatements(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"select 1", []string{"select 1"}},
		{"select 1; select 2;", []string{"select 1", "select 2"}},
		{" ; ;; ", nil},
		{"-- only a comment", nil},
		{"select ';' ; select \"a;b\"", []string{"select ';'", "select \"a;b\""}},
		{"select 'it''s; fine'; select 2", []string{"select 'it''s; fine'", "select 2"}},
		{`select E'a\';b'; select 2`, []string{`select E'a\';b'`, "select 2"}},
		{"select $$a;b$$; select $tag$ $$ ; $tag$", []string{"select $$a;b$$", "select $tag$ $$ ; $tag$"}},
		{"select 1 /* a; /* nested; */ still; */ ; select 2", []string{"select 1 /* a; /* nested; */ still; */", "select 2"}},
		{"select 1 -- c; d\n; select 2", []string{"select 1 -- c; d", "select 2"}},
		{"select $1, a$b; select 3", []string{"select $1, a$b", "select 3"}},
		{"select 'unterminated; select 2", []string{"select 'unterminated; select 2"}},
	}
	for _, c := range cases {
		if got := SplitStatements(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitStatements(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCountParams(t *testing.T) {
	cases := map[string]int{
		"select 1":                          0,
		"select $1, $3":                     3,
		"select '$5', $2 -- $9":             2,
		"select $$ $7 $$, $1":               1,
		"select a$1 from t where x = $12":   12,
		"select /* $4 */ \"$6\", $2::int[]": 2,
	}
	for sql, want := range cases {
		if got := CountParams(sql); got != want {
			t.Errorf("CountParams(%q) = %d, want %d", sql, got, want)
		}
	}
}

// TestSplitStatementsJoinProperty: statements made of quoted pieces holding semicolons, joined
// with ";", split back into themselves.
func TestSplitStatementsJoinProperty(t *testing.T) {
	piece := rapid.SampledFrom([]string{"select 1", "'a;b'", `"x;y"`, "$$c;d$$", "$q$;$q$", "/* ; */ 2", "E'\\';'", "f(3)"})
	rapid.Check(t, func(t *rapid.T) {
		stmts := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string {
			return strings.Join(rapid.SliceOfN(piece, 1, 4).Draw(t, "pieces"), " ")
		}), 1, 5).Draw(t, "stmts")
		joined := strings.Join(stmts, ";\n")
		if got := SplitStatements(joined); !reflect.DeepEqual(got, stmts) {
			t.Fatalf("split %q into %q", stmts, got)
		}
	})
}

package sqltok

import (
	"strings"
	"testing"
)

func TestFirstWord(t *testing.T) {
	for sql, want := range map[string]string{
		"  /* c */ -- line\n DROP TABLE a": "DROP",
		"copy t from stdin":                "copy",
		"(select 1)":                       "",
		"'drop' table":                     "",
		"":                                 "",
		"-- only a comment":                "",
	} {
		if got := FirstWord(Tokenize(sql, Postgres)); got != want {
			t.Errorf("FirstWord(%q) = %q, want %q", sql, got, want)
		}
	}
}

func TestSplitAtCommas(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"a = 1, b = f(1, 2), c = (3, 4)", "a = 1|b = f ( 1 , 2 )|c = ( 3 , 4 )"},
		{"x = 'a,b'", "x = 'a,b'"},
		{"", ""},
		{"a,,b", "a||b"},
	} {
		var parts []string
		for _, p := range SplitAtCommas(SignificantTokens(c.sql, MySQL)) {
			texts := make([]string, len(p))
			for i, tk := range p {
				texts[i] = tk.Text
			}
			parts = append(parts, strings.Join(texts, " "))
		}
		if got := strings.Join(parts, "|"); got != c.want {
			t.Errorf("%q: %q, want %q", c.sql, got, c.want)
		}
	}
}

// TestNameParts: Trino folds an unquoted part to lower case, DuckDB keeps its case; a quoted
// part is kept as written, its doubled quotes one, either way.
func TestNameParts(t *testing.T) {
	for _, c := range []struct {
		sql         string
		lower, kept string
	}{
		{`Cat."My ""S""".Tab like 'x'`, `cat|My "S"|tab`, `Cat|My "S"|Tab`},
		{`"T"`, `T`, `T`},
		{`'str'`, ``, ``},
		{`a.`, `a`, `a`},
	} {
		for _, lower := range []bool{true, false} {
			want := c.kept
			if lower {
				want = c.lower
			}
			got := strings.Join(NewWalker(Tokenize(c.sql, Trino)).NameParts(lower), "|")
			if got != want {
				t.Errorf("NameParts(%q, lower %v) = %q, want %q", c.sql, lower, got, want)
			}
		}
	}
}

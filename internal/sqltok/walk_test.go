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

package sqltok

import "testing"

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

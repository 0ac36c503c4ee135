package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// similar writes x [NOT] SIMILAR TO 'pattern' as DuckDB must read it, when t is that SIMILAR
// and the pattern a literal with no ESCAPE clause: DuckDB's SIMILAR TO takes its pattern as a
// regular expression matched whole, where PostgreSQL's is SQL's (% any string, _ any
// character, . a dot, the rest of the regular expression syntax as it is). It reports whether
// it wrote anything.
func (w *compatWriter) similar(t sqltok.Token) bool {
	if !t.IsWord("similar") {
		return false
	}
	to := w.sig(w.i+1, 0)
	lit := w.sig(to+1, 0)
	if w.word(to) != "to" || lit < 0 || w.toks[lit].Kind != sqltok.String || w.toks[lit].Unterminated || !strings.HasPrefix(w.toks[lit].Text, "'") ||
		w.word(w.sig(lit+1, 0)) == "escape" {
		return false
	}
	w.emit(t.Text + " " + w.toks[to].Text + " " + similarRegex(plainString(w.toks[lit].Text)))
	w.i = lit + 1
	return true
}

// similarRegex is SQL regular expression pattern as a literal of the regular expression
// (RE2's) that matches the same strings whole: % is .*, _ is ., a backslash escapes the next
// character (PostgreSQL's default escape), and the characters that are literal in SQL's
// syntax but special in RE2's (. ^ $) are escaped; | * + ? { } ( ) [ ] keep their meaning.
// The text and its newlines are matched by . as PostgreSQL's (?s).
func similarRegex(pattern string) string {
	var b strings.Builder
	b.WriteString("(?s)")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		case '.', '^', '$':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\\':
			if i+1 < len(pattern) {
				i++
				if strings.IndexByte(`\.^$|*+?{}()[]`, pattern[i]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(pattern[i])
			} else {
				b.WriteString(`\\`)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "'" + strings.ReplaceAll(b.String(), "'", "''") + "'"
}

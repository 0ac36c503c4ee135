// Package trinoshow writes a Trino SHOW statement's answer as one engine query: the rows a
// dialect package (trinopg, trinomy) selects from the engine's catalog, filtered by the
// statement's LIKE pattern. It touches nothing but the tokens it is given.
package trinoshow

import (
	"cmp"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Listing is a SHOW statement's answer: Cols selected from Inner (the first filtered by the
// statement's LIKE), in Order (default: by the first).
type Listing struct{ Cols, Inner, Order string }

// Dialect is how an engine writes the LIKE filter: its operator (a case-sensitive LIKE, as
// Trino's) and a Trino string literal in its own quoting.
type Dialect struct {
	Like    string
	Literal func(trino string) string
}

// SQL reads an optional LIKE 'pattern' [ESCAPE 'c'] and the end of the statement from r, and
// returns the engine's query; false when the rest of the statement is not that.
func (l Listing) SQL(r *sqltok.Walker, d Dialect) (string, bool) {
	first, _, _ := strings.Cut(l.Cols, ",")
	where := ""
	if r.Word("like") {
		pattern, ok := stringAt(r)
		if !ok {
			return "", false
		}
		where = " WHERE " + first + " " + d.Like + " " + d.Literal(pattern)
		if r.Word("escape") {
			esc, ok := stringAt(r)
			if !ok {
				return "", false
			}
			where += " ESCAPE " + d.Literal(esc)
		}
	}
	r.Punct(";")
	if r.More() {
		return "", false
	}
	return "SELECT " + l.Cols + " FROM (" + l.Inner + ") AS s" + where + " ORDER BY " + cmp.Or(l.Order, first), true
}

func stringAt(r *sqltok.Walker) (string, bool) {
	t := r.Peek()
	if t.Kind != sqltok.String {
		return "", false
	}
	r.Next()
	return t.Text, true
}

package pgengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// numberedParams rewrites the ? placeholders of a statement from a client whose dialect marks
// parameters with ? (Trino's EXECUTE ... USING, the MySQL wire's prepared statements) into
// PostgreSQL's $1, $2, ..., in order. Statements without arguments, and those from PostgreSQL
// clients (where ? is an operator), are left as they are; so are ? inside strings, quoted
// identifiers and comments.
func numberedParams(q *query.Request) string {
	if len(q.Args) == 0 {
		return q.SQL
	}
	a := q.Analysis()
	if a.Dialect != sqltok.Trino && a.Dialect != sqltok.MySQL {
		return q.SQL
	}
	var b strings.Builder
	n := 0
	for _, t := range a.Tokens {
		if t.Kind == sqltok.Param && t.Text == "?" {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

package pgengine

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// numberedParams rewrites the ? placeholders of a statement from a client whose dialect marks
// parameters with ? (Trino's EXECUTE ... USING, the MySQL wire's prepared statements) into
// PostgreSQL's $1, $2, ..., in order. Statements without arguments, and those from PostgreSQL
// clients (where ? is an operator), are left as they are; so are ? inside strings, quoted
// identifiers and comments. A MySQL client's string literals that PostgreSQL would misread
// (sqltok.MySQLLiteral: 'O\'Brien', what PyMySQL and mysqlclient send for the parameter
// O'Brien, was a syntax error) are written as standard literals of the same value, and
// _binary'...' as bytea; its `quoted` names are "quoted" (PostgreSQL has no backquotes: the
// MySQL frontend writes its session values' column names so, as MySQL clients and ORMs write
// names).
func numberedParams(q *query.Request) string {
	mysqlLiterals := q.Protocol == query.ProtocolMySQL && (sqltok.MayHoldMySQLEscapes(q.SQL) || strings.IndexByte(q.SQL, '`') >= 0)
	if len(q.Args) == 0 && !mysqlLiterals {
		return q.SQL
	}
	a := q.Analysis()
	if a.Dialect != sqltok.Trino && a.Dialect != sqltok.MySQL {
		return q.SQL
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(a.Tokens); i++ {
		t := a.Tokens[i]
		if t.Kind == sqltok.Param && t.Text == "?" && len(q.Args) > 0 {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		if mysqlLiterals {
			if t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated && len(t.Text) >= 2 {
				b.WriteString(`"` + strings.ReplaceAll(strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`"), `"`, `""`) + `"`)
				continue
			}
			if v, binary, span := sqltok.MySQLLiteral(a.Tokens, i); span > 0 {
				if binary {
					b.WriteString(`'\x` + hex.EncodeToString([]byte(v)) + `'::bytea`)
				} else {
					b.WriteString(sqltok.StandardString(v)) // a NUL stays: PostgreSQL refuses it in text
				}
				i += span - 1
				continue
			}
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

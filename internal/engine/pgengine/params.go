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
// names). DATABASE() and SCHEMA() are current_schema(): a MySQL database is a PostgreSQL schema
// (mysqlshow.go), and ORMs ask it at connect (SQLAlchemy's default schema).
func numberedParams(q *query.Request) string {
	mysqlLiterals := q.Protocol == query.ProtocolMySQL && (sqltok.MayHoldMySQLEscapes(q.SQL) || strings.IndexByte(q.SQL, '`') >= 0 ||
		mayCallDatabase(q.SQL))
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
			if end := databaseCall(a.Tokens, i); end > 0 {
				b.WriteString("current_schema()")
				i = end
				continue
			}
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

// mayCallDatabase reports cheaply whether sqlText may call DATABASE() or SCHEMA().
func mayCallDatabase(sqlText string) bool {
	for i := 0; i+len("schema") <= len(sqlText); i++ {
		switch sqlText[i] | 0x20 {
		case 'd':
			if i+len("database") <= len(sqlText) && strings.EqualFold(sqlText[i:i+len("database")], "database") {
				return true
			}
		case 's':
			if strings.EqualFold(sqlText[i:i+len("schema")], "schema") {
				return true
			}
		}
	}
	return false
}

// databaseCall is, when toks[i] calls DATABASE() or SCHEMA() (blanks and comments may come
// between the name and its parentheses), the index of its ")"; 0 otherwise.
func databaseCall(toks []sqltok.Token, i int) int {
	if toks[i].Kind != sqltok.Word || !strings.EqualFold(toks[i].Text, "database") && !strings.EqualFold(toks[i].Text, "schema") {
		return 0
	}
	want := []string{"(", ")"}
	for j := i + 1; j < len(toks); j++ {
		switch {
		case !toks[j].Significant():
		case toks[j].Text != want[0]:
			return 0
		case len(want) == 1:
			return j
		default:
			want = want[1:]
		}
	}
	return 0
}

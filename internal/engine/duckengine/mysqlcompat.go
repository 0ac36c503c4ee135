package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// mysqlCompat is a MySQL client's sqlText with every literal DuckDB would misread
// (sqltok.MySQLLiteral: 'O\'Brien', 'C:\\temp', _binary'...') written as DuckDB reads it, the
// same value, and every `backquoted` identifier double-quoted (DuckDB reads backquotes from
// 2.0 on); sqlText itself when there is none. Before, 'O\'Brien' (what PyMySQL and mysqlclient
// send for the parameter O'Brien) failed as a syntax error, 'C:\\temp' came back with both
// backslashes, and SELECT `id` FROM `t` (as ORMs and mysql2's escapeId write names) failed.
func mysqlCompat(sqlText string) string {
	if !sqltok.MayHoldMySQLEscapes(sqlText) && strings.IndexByte(sqlText, '`') < 0 {
		return sqlText
	}
	toks := sqltok.Tokenize(sqlText, sqltok.MySQL)
	var b strings.Builder
	changed := false
	for i := 0; i < len(toks); i++ {
		v, binary, n := sqltok.MySQLLiteral(toks, i)
		switch t := toks[i]; {
		case t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated && len(t.Text) >= 2:
			name := strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`")
			b.WriteString(quoteIdent(name))
			changed = true
			continue
		case n == 0:
			b.WriteString(toks[i].Text)
			continue
		case binary:
			b.WriteString(blobLiteral(v))
		default:
			b.WriteString(duckString(v))
		}
		i += n - 1
		changed = true
	}
	if !changed {
		return sqlText
	}
	return b.String()
}

// duckString writes v as a DuckDB string literal. DuckDB takes a statement's text as a C
// string, so a NUL byte cannot be in it: each one is joined in as chr(0).
func duckString(v string) string {
	if !strings.Contains(v, "\x00") {
		return sqltok.StandardString(v)
	}
	parts := strings.Split(v, "\x00")
	for i := range parts {
		parts[i] = sqltok.StandardString(parts[i])
	}
	return "(" + strings.Join(parts, " || chr(0) || ") + ")"
}

// blobLiteral writes v's bytes as a DuckDB BLOB literal, every byte as a \xHH escape.
func blobLiteral(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(4*len(v) + 8)
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		b.WriteString(`\x`)
		b.WriteByte(hex[v[i]>>4])
		b.WriteByte(hex[v[i]&15])
	}
	b.WriteString("'::BLOB")
	return b.String()
}

// isMySQL reports whether q came from a MySQL client.
func isMySQL(q *query.Request) bool { return q.Protocol == query.ProtocolMySQL }

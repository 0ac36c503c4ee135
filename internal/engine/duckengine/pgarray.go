package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// PostgreSQL clients write arrays in PostgreSQL's text form: '{1,2,NULL}', '{"a b","c\"d"}',
// '{{1,2},{3,4}}'. node-postgres sends a JavaScript array as that text, pgx's and psycopg's
// binary arrays reach the engine as it (pgwire's decodeBinaryParam), and SQL writes it as a
// literal cast to an array type. DuckDB casts text to a list only from its own form
// ('["a b", "c\"d"]'), so pgArrayToList rewrites the one into the other: every element quoted
// (a backslash escapes a quote or a backslash inside DuckDB's quotes too), NULL unquoted.

// pgArrayToList is PostgreSQL array text s as DuckDB list text.
func pgArrayToList(s string) (string, error) {
	p := pgArrayParser{s: s}
	if p.skipSpace(); p.peek() == '[' { // dimensions, [1:3]={...}: the bounds are not kept
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return "", p.malformed("missing \"=\" after array dimensions")
		}
		p.i = eq + 1
	}
	var out strings.Builder
	if err := p.array(&out); err != nil {
		return "", err
	}
	if p.skipSpace(); p.i < len(s) {
		return "", p.malformed("junk after closing right brace")
	}
	return out.String(), nil
}

type pgArrayParser struct {
	s string
	i int
}

func (p *pgArrayParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pgArrayParser) skipSpace() {
	for p.i < len(p.s) && isArraySpace(p.s[p.i]) {
		p.i++
	}
}

func isArraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func (p *pgArrayParser) malformed(why string) error {
	return &query.Error{Code: sqlstate.InvalidTextRepresentation, Message: fmt.Sprintf("malformed array literal: %q: %s", p.s, why)}
}

// array reads {elem, ...} at p.i and writes it as [elem, ...].
func (p *pgArrayParser) array(out *strings.Builder) error {
	if p.skipSpace(); p.peek() != '{' {
		return p.malformed(`array value must start with "{" or dimension information`)
	}
	p.i++
	out.WriteByte('[')
	if p.skipSpace(); p.peek() == '}' {
		p.i++
		out.WriteByte(']')
		return nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			out.WriteString(", ")
		}
		if err := p.element(out); err != nil {
			return err
		}
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			out.WriteByte(']')
			return nil
		default:
			return p.malformed(`unexpected end of element: "," or "}" expected`)
		}
	}
}

// element reads one element (a nested array, a quoted or an unquoted value) and writes it.
func (p *pgArrayParser) element(out *strings.Builder) error {
	p.skipSpace()
	switch p.peek() {
	case '{':
		return p.array(out)
	case '"':
		p.i++
		var v strings.Builder
		for {
			if p.i >= len(p.s) {
				return p.malformed("unterminated quoted element")
			}
			c := p.s[p.i]
			p.i++
			switch c {
			case '"':
				writeListString(out, v.String())
				return nil
			case '\\':
				if p.i >= len(p.s) {
					return p.malformed("unexpected end of input after a backslash")
				}
				c = p.s[p.i]
				p.i++
			}
			v.WriteByte(c)
		}
	}
	var v strings.Builder
	escaped := 0 // v's length up to the last escaped byte: trailing spaces before it stay
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == ',' || c == '}' {
			break
		}
		if c == '{' || c == '"' {
			return p.malformed(fmt.Sprintf("unexpected %q in an unquoted element", c))
		}
		p.i++
		if c == '\\' {
			if p.i >= len(p.s) {
				return p.malformed("unexpected end of input after a backslash")
			}
			c = p.s[p.i]
			p.i++
			v.WriteByte(c)
			escaped = v.Len()
			continue
		}
		v.WriteByte(c)
	}
	val := v.String()
	end := len(val)
	for end > escaped && isArraySpace(val[end-1]) {
		end--
	}
	val = val[:end]
	switch {
	case val == "" && escaped == 0:
		return p.malformed("empty unquoted element")
	case escaped == 0 && strings.EqualFold(val, "NULL"):
		out.WriteString("NULL")
	default:
		writeListString(out, val)
	}
	return nil
}

// writeListString writes v as a quoted element of DuckDB's list text.
func writeListString(out *strings.Builder, v string) {
	out.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			out.WriteByte('\\')
		}
		out.WriteByte(v[i])
	}
	out.WriteByte('"')
}

// isDuckDBList reports whether s is DuckDB's list text ([1, 2]) rather than PostgreSQL's
// array text, which may start with dimensions ([1:2]={1,2}).
func isDuckDBList(s string) bool {
	s = strings.TrimLeft(s, " \t\n\r\v\f")
	return strings.HasPrefix(s, "[") && !strings.Contains(s, "]={")
}

// listParamType names the list type of parameter n by its cast in sqlText ($1::int[]:
// INTEGER[]), so that a client that sends typed values (pgx) sends an array of that element
// type; VARCHAR (text, which DuckDB casts) when no cast says.
func listParamType(ctx context.Context, conn *sql.Conn, sqlText string, n int) string {
	for _, typ := range castCandidates(sqlText, n) {
		if !strings.HasSuffix(typ, "]") {
			continue
		}
		var name string
		if err := conn.QueryRowContext(ctx, "SELECT typeof(NULL::"+typ+")").Scan(&name); err == nil {
			return name
		}
	}
	return "VARCHAR"
}

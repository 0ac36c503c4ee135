// Package redact decides how much of a query may leave the node that ran it: the SQL text, the
// engine's error message and the routing trace. Policies:
//
//   - none: everything is kept as it was.
//   - maskLiterals: SQL becomes its parameterized form (literals -> ?) plus a digest; quoted
//     values and numbers in error text and in the routing trace are masked.
//   - metadata: SQL text, error text and routing trace are dropped; only the digest and the
//     measurements remain.
//
// It is pure computation on strings: it touches nothing, so role code may call it anywhere.
package redact

import (
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Policy is a redaction policy.
type Policy string

const (
	None         Policy = "none"
	MaskLiterals Policy = "maskLiterals"
	Metadata     Policy = "metadata"
)

// ParsePolicy accepts the three policy names; "" means maskLiterals, the safe default.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case None, MaskLiterals, Metadata:
		return Policy(s), nil
	case "":
		return MaskLiterals, nil
	}
	return "", fmt.Errorf("redact: unknown policy %q (want none, maskLiterals or metadata)", s)
}

// Query is the sensitive part of a query record.
type Query struct {
	SQL          string
	Error        string
	RoutingTrace []string
}

// Redacted is what survives a policy. Digest is set under every policy.
type Redacted struct {
	SQL          string
	Digest       string
	Error        string
	RoutingTrace []string
}

// Apply redacts q under p; d gives the lexical rules of the SQL (sqltok.DialectForProtocol).
// An unknown policy is treated as metadata: when unsure, keep the least.
func Apply(p Policy, d sqltok.Dialect, q Query) Redacted {
	normalized := sqltok.NormalizeDialect(q.SQL, d)
	out := Redacted{Digest: sqltok.DigestNormalized(normalized)}
	switch p {
	case None:
		out.SQL, out.Error = q.SQL, q.Error
		out.RoutingTrace = append([]string(nil), q.RoutingTrace...)
	case MaskLiterals:
		out.SQL = normalized
		if cut, word := credentialAt(q.SQL); cut >= 0 && !onlyQueriesAndDML(q.SQL) {
			out.SQL = strings.TrimSpace(sqltok.NormalizeDialect(q.SQL[:cut], d) + " " + word + " ...")
		}
		out.Error = MaskText(q.Error)
		if q.RoutingTrace != nil {
			out.RoutingTrace = make([]string, len(q.RoutingTrace))
			for i, s := range q.RoutingTrace {
				out.RoutingTrace[i] = MaskText(s)
			}
		}
	}
	return out
}

// credentialWords start what may hold a credential in a statement: ALTER USER ... PASSWORD
// '...', SET PASSWORD, CREATE USER ... IDENTIFIED BY '...', a connection string's password=...
// (dblink, CREATE SUBSCRIPTION), CREATE USER MAPPING ... OPTIONS (password '...'), MySQL's
// MASTER_PASSWORD. Masking literals reads a statement as the client's protocol does, which is
// not always how the engine reads it (a PostgreSQL client's PASSWORD("...") to MariaDB, where
// "..." is a string; $$...$$ from a MySQL client to PostgreSQL; a backslash under
// standard_conforming_strings off): a secret the one reading takes for words would be kept. So
// the text of a statement holding one of these words, anywhere (in a string, a comment, a
// name), is kept only up to it, unless every statement in it is a query or DML (SELECT ...
// WHERE password_hash = '...' keeps its shape, its values masked as usual).
var credentialWords = []string{"password", "identified"}

// onlyQueriesAndDML reports whether every statement of sql is a SELECT, INSERT, UPDATE or
// DELETE.
func onlyQueriesAndDML(sql string) bool {
	for _, k := range sqltok.StatementKinds(sql) {
		switch k {
		case sqltok.KindSelect, sqltok.KindInsert, sqltok.KindUpdate, sqltok.KindDelete:
		default:
			return false
		}
	}
	return true
}

// credentialAt is the index in sql of the first of credentialWords, in any case, and the word;
// -1 if none.
func credentialAt(sql string) (int, string) {
	at, word := -1, ""
	for _, w := range credentialWords {
		if i := indexFold(sql, w); i >= 0 && (at < 0 || i < at) {
			at, word = i, w
		}
	}
	return at, word
}

// indexFold is the index of the first ASCII case-insensitive occurrence of word (lower case) in
// s, or -1.
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

const (
	mysqlNear   = "near '"
	mysqlAtLine = "' at line "
)

// MaskText masks the values free text may quote: anything in '...', "..." or `...` becomes
// '?', "?" or `?`, a $tag$...$tag$ string becomes $?$, a parenthesized list after = (PostgreSQL's "Key (id)=(5)") becomes (?), and a
// number that stands alone (not part of a name like t1 or v2.3) becomes ?, and MySQL's
// "near '<rest of statement>' at line N" loses the statement. An unterminated quote masks the
// rest of the text. Free text has no grammar: a value that contains its own quote character
// can only be masked up to that character.
func MaskText(s string) string {
	if s == "" {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case strings.HasPrefix(s[i:], mysqlNear):
			// MySQL echoes the rest of the statement raw, quotes and all: mask it whole.
			b.WriteString(mysqlNear + "?")
			if end := strings.LastIndex(s, mysqlAtLine); end > i+len(mysqlNear) {
				b.WriteByte('\'')
				i = end + 1
			} else {
				i = len(s)
			}
		case c == '\'' || c == '"' || c == '`':
			b.WriteByte(c)
			b.WriteByte('?')
			i = closingQuote(s, i)
			if i < len(s) {
				b.WriteByte(c)
				i++
			}
		case c == '$' && dollarTagEnd(s, i) > 0:
			b.WriteString("$?$")
			tag := s[i:dollarTagEnd(s, i)]
			if end := strings.Index(s[i+len(tag):], tag); end >= 0 {
				i += len(tag) + end + len(tag)
			} else {
				i = len(s)
			}
		case c == '=' && i+1 < len(s) && s[i+1] == '(':
			b.WriteString("=(?)")
			i = closingParen(s, i+1)
		case isDigit(c) && standsAlone(s, i):
			b.WriteByte('?')
			i = numberEnd(s, i)
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// closingQuote returns the index of the quote closing the one at open, or len(s). A doubled
// quote is an escaped one; a backslash is not an escape, since engines print values raw.
func closingQuote(s string, open int) int {
	q := s[open]
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i
		}
	}
	return len(s)
}

// dollarTagEnd returns the end of a $tag$ dollar-quote opener at i, or 0.
func dollarTagEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			return j + 1
		}
		if !(c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' || (j > i+1 && isDigit(c))) {
			return 0
		}
	}
	return 0
}

// closingParen returns the index after the parenthesis matching the one at open, or len(s).
func closingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '\'', '"':
			i = closingQuote(s, i)
		}
	}
	return len(s)
}

func standsAlone(s string, i int) bool {
	if i == 0 {
		return true
	}
	p := s[i-1]
	return !(isAlnum(p) || p == '_' || p == '.' || p >= 0x80)
}

// numberEnd returns the end of the number starting at i: digits, '.', '_', exponent, hex digits.
func numberEnd(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case isAlnum(c) || c == '.' || c == '_':
			i++
		case (c == '+' || c == '-') && (s[i-1]|0x20) == 'e':
			i++
		default:
			return i
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || ((c|0x20) >= 'a' && (c|0x20) <= 'z') }

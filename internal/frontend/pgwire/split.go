package pgwire

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// SplitStatements splits a simple-protocol query string at top-level semicolons with the
// PostgreSQL rules of internal/sqltok ('...' and E'...' strings, "..." identifiers,
// $tag$...$tag$ dollar quotes, -- and nested /* */ comments). Empty statements (only blanks
// and comments) are dropped; each statement is trimmed.
func SplitStatements(sql string) []string {
	if one, ok := singleStatement(sql); ok {
		return one
	}
	return sqltok.SplitDialect(sql, sqltok.Postgres)
}

// singleStatement is SplitStatements' fast path (every simple-protocol query takes it): a
// string without comment starters and without a ';' (but one at its end) is one statement, or
// none when blank.
// The tokenizer's allocations showed up as the largest item of the proxy's per-query profile.
func singleStatement(sql string) ([]string, bool) {
	const blanks = " \t\n\r\f"
	trimmed := strings.Trim(sql, blanks)
	if body, ok := strings.CutSuffix(trimmed, ";"); ok {
		// One trailing ';' (pgbench, psql scripts): fine unless the ';' could be inside a
		// string, identifier or dollar quote left open, or anything else needs the tokenizer.
		if strings.ContainsAny(body, ";-/'\"$\\") {
			return nil, false
		}
		trimmed = strings.Trim(body, blanks)
	} else if strings.ContainsAny(sql, ";-/") {
		return nil, false
	}
	if strings.TrimSpace(trimmed) != trimmed {
		return nil, false // other Unicode blanks: leave them to the tokenizer's rules
	}
	if trimmed == "" {
		return nil, true
	}
	return []string{trimmed}, true
}

// CountParams is the highest $n placeholder in sql (outside strings and comments).
func CountParams(sql string) int {
	highest := 0
	scanSQL(sql, func(i int, kind tokenKind) {
		if kind != tokParam {
			return
		}
		n := 0
		for j := i + 1; j < len(sql) && sql[j] >= '0' && sql[j] <= '9' && n < 1<<16; j++ {
			n = n*10 + int(sql[j]-'0')
		}
		highest = max(highest, n)
	})
	return highest
}

type tokenKind int

const (
	tokCode      tokenKind = iota // a non-blank byte of code (including inside strings)
	tokSemicolon                  // a top-level ';'
	tokParam                      // the '$' of a $n placeholder
)

// scanSQL walks sql once and reports code bytes, top-level semicolons and placeholders.
func scanSQL(sql string, emit func(i int, kind tokenKind)) {
	n := len(sql)
	for i := 0; i < n; {
		ch := sql[i]
		switch {
		case ch == ';':
			emit(i, tokSemicolon)
			i++
		case ch == '-' && i+1 < n && sql[i+1] == '-':
			for i < n && sql[i] != '\n' {
				i++
			}
		case ch == '/' && i+1 < n && sql[i+1] == '*':
			i = skipBlockComment(sql, i)
		case ch == '\'':
			emit(i, tokCode)
			backslash := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !isIdentByte(sql[i-2]))
			i = skipQuoted(sql, i, '\'', backslash)
		case ch == '"':
			emit(i, tokCode)
			i = skipQuoted(sql, i, '"', false)
		case ch == '$':
			emit(i, tokCode)
			if i+1 < n && sql[i+1] >= '0' && sql[i+1] <= '9' && (i == 0 || !isIdentByte(sql[i-1])) {
				emit(i, tokParam)
				i++
				continue
			}
			if tag, ok := dollarTag(sql, i); ok && (i == 0 || !isIdentByte(sql[i-1])) {
				end := strings.Index(sql[i+len(tag):], tag)
				if end < 0 {
					return // unterminated: the rest is one string
				}
				i += len(tag) + end + len(tag)
				continue
			}
			i++
		default:
			if ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r' && ch != '\f' {
				emit(i, tokCode)
			}
			i++
		}
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// dollarTag returns "$tag$" starting at i, if one does.
func dollarTag(sql string, i int) (string, bool) {
	for j := i + 1; j < len(sql); j++ {
		b := sql[j]
		if b == '$' {
			return sql[i : j+1], true
		}
		if !(b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80 || (j > i+1 && b >= '0' && b <= '9')) {
			return "", false
		}
	}
	return "", false
}

// skipQuoted returns the index after the quote closing the one at i (doubled quotes escape;
// backslashes too in E” strings), or len(sql) when it never closes.
func skipQuoted(sql string, i int, q byte, backslash bool) int {
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if backslash {
				j++
			}
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

func skipBlockComment(sql string, i int) int {
	depth := 0
	for j := i; j < len(sql); {
		switch {
		case j+1 < len(sql) && sql[j] == '/' && sql[j+1] == '*':
			depth++
			j += 2
		case j+1 < len(sql) && sql[j] == '*' && sql[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		default:
			j++
		}
	}
	return len(sql)
}

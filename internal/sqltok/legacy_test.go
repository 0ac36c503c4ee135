package sqltok

import (
	"strings"
	"unicode"
)

// The lexers the frontends and engines carried before they moved onto this package, kept
// verbatim as oracles: scan_test.go requires the new functions to answer as these did, except
// for the fixes it names.

// oldPgBeginsTransaction is pgwire's beginsTransaction: the first blank-separated word.
func oldPgBeginsTransaction(sql string) bool {
	sql = strings.TrimLeftFunc(sql, unicode.IsSpace)
	if end := strings.IndexFunc(sql, unicode.IsSpace); end >= 0 {
		sql = sql[:end]
	}
	word := strings.TrimRight(sql, ";")
	return strings.EqualFold(word, "BEGIN") || strings.EqualFold(word, "START")
}

// oldPgFirstWord is pgwire's firstWord: the first run of ASCII letters after blanks and comments.
func oldPgFirstWord(sql string) string {
	i := oldPgSkipBlanksAndComments(sql)
	j := i
	for j < len(sql) && ((sql[j]|0x20) >= 'a' && (sql[j]|0x20) <= 'z') {
		j++
	}
	return sql[i:j]
}

func oldPgSkipBlanksAndComments(sql string) int {
	i := 0
	for i < len(sql) {
		switch {
		case sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' || sql[i] == '\r' || sql[i] == '\f' || sql[i] == '\v':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				return len(sql)
			}
			i += end + 1
		case strings.HasPrefix(sql[i:], "/*"):
			i = oldPgSkipBlockComment(sql, i)
		default:
			return i
		}
	}
	return i
}

// oldMySQLFirstWord is mysqlwire's firstWord: the first blank-separated field, upper-cased.
func oldMySQLFirstWord(sql string) string {
	f := strings.Fields(sql)
	if len(f) == 0 {
		return ""
	}
	return strings.ToUpper(strings.TrimRight(f[0], ";"))
}

// oldMySQLEngineFirstWord is mysqlengine's firstWord.
func oldMySQLEngineFirstWord(sql string) string {
	s := strings.TrimLeft(sql, " \t\r\n(")
	end := strings.IndexAny(s, " \t\r\n;(")
	if end < 0 {
		return s
	}
	return s[:end]
}

// oldMySQLCountParams is mysqlwire's countParams.
func oldMySQLCountParams(sql string) int {
	n := 0
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; c {
		case '?':
			n++
		case '\'', '"', '`':
			i = oldMySQLSkipQuoted(sql, i, c)
		case '#':
			i = oldMySQLSkipLine(sql, i)
		case '-':
			if strings.HasPrefix(sql[i:], "-- ") || sql[i:] == "--" {
				i = oldMySQLSkipLine(sql, i)
			}
		case '/':
			if strings.HasPrefix(sql[i:], "/*") {
				if end := strings.Index(sql[i+2:], "*/"); end >= 0 {
					i += end + 3
				} else {
					i = len(sql)
				}
			}
		}
	}
	return n
}

func oldMySQLSkipQuoted(sql string, i int, q byte) int {
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j
		}
	}
	return len(sql)
}

func oldMySQLSkipLine(sql string, i int) int {
	if end := strings.IndexByte(sql[i:], '\n'); end >= 0 {
		return i + end
	}
	return len(sql)
}

// oldPgCountParams is pgwire's CountParams over its scanSQL.
func oldPgCountParams(sql string) int {
	highest := 0
	n := len(sql)
	for i := 0; i < n; {
		ch := sql[i]
		switch {
		case ch == '-' && i+1 < n && sql[i+1] == '-':
			for i < n && sql[i] != '\n' {
				i++
			}
		case ch == '/' && i+1 < n && sql[i+1] == '*':
			i = oldPgSkipBlockComment(sql, i)
		case ch == '\'':
			backslash := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !oldIsIdentByte(sql[i-2]))
			i = oldPgSkipQuoted(sql, i, '\'', backslash)
		case ch == '"':
			i = oldPgSkipQuoted(sql, i, '"', false)
		case ch == '$':
			if i+1 < n && sql[i+1] >= '0' && sql[i+1] <= '9' && (i == 0 || !oldIsIdentByte(sql[i-1])) {
				v := 0
				for j := i + 1; j < len(sql) && sql[j] >= '0' && sql[j] <= '9' && v < 1<<16; j++ {
					v = v*10 + int(sql[j]-'0')
				}
				highest = max(highest, v)
				i++
				continue
			}
			if tag, ok := oldPgDollarTag(sql, i); ok && (i == 0 || !oldIsIdentByte(sql[i-1])) {
				end := strings.Index(sql[i+len(tag):], tag)
				if end < 0 {
					return highest
				}
				i += len(tag) + end + len(tag)
				continue
			}
			i++
		default:
			i++
		}
	}
	return highest
}

func oldIsIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

func oldPgDollarTag(sql string, i int) (string, bool) {
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

func oldPgSkipQuoted(sql string, i int, q byte, backslash bool) int {
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

func oldPgSkipBlockComment(sql string, i int) int {
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

// oldSplit is SplitDialect before its fast path moved here and before it became one pass.
func oldSplit(sql string, d Dialect) []string {
	var out []string
	start := 0
	add := func(end int) {
		if s := strings.TrimSpace(sql[start:end]); s != "" && oldHasSignificant(s, d) {
			out = append(out, s)
		}
	}
	for _, t := range Tokenize(sql, d) {
		if t.Kind == Punct && t.Text == ";" {
			add(t.Pos)
			start = t.Pos + 1
		}
	}
	add(len(sql))
	return out
}

func oldHasSignificant(s string, d Dialect) bool {
	for _, t := range Tokenize(s, d) {
		if t.Significant() {
			return true
		}
	}
	return false
}

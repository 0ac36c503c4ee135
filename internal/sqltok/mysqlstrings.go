package sqltok

import "strings"

// MySQL clients that interpolate their parameters into a statement's text (PyMySQL,
// mysqlclient, mysql2's query with values, go-sql-driver with interpolateParams) write strings
// the MySQL way: 'O\'Brien', 'C:\\temp', 'a\nb', and bytes as _binary'...'. Engines that read
// SQL's standard literals (DuckDB, PostgreSQL) take a backslash as an ordinary character, so
// the first is a syntax error there and the others change. What follows finds such literals and
// their values, for an engine to write them its own way.

// MayHoldMySQLEscapes reports cheaply whether sql may hold a literal MySQLLiteral reads: it
// holds a backslash, a double quote, _binary, X' or 0x. Most statements cost this scan only.
func MayHoldMySQLEscapes(sql string) bool {
	return strings.IndexAny(sql, "\\\"") >= 0 || hasBinaryIntroducer(sql) || hasHexLiteral(sql)
}

// hasHexLiteral reports whether sql holds X' or 0x, in either case.
func hasHexLiteral(sql string) bool {
	for i := 1; i < len(sql); i++ {
		if c := sql[i]; c == '\'' && sql[i-1]|0x20 == 'x' || c|0x20 == 'x' && sql[i-1] == '0' {
			return true
		}
	}
	return false
}

func hasBinaryIntroducer(sql string) bool {
	for i := strings.IndexByte(sql, '_'); i >= 0 && i+7 <= len(sql); {
		if strings.EqualFold(sql[i:i+7], "_binary") {
			return true
		}
		next := strings.IndexByte(sql[i+1:], '_')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// MySQLLiteral reads, at toks[i] of a statement tokenized with the MySQL rules, a literal that
// an engine reading standard SQL would misread: a '...' string holding a backslash, the
// introducer _binary and its '...' string, or a hexadecimal literal (X'4142' or 0x4142: bytes,
// as MySQL reads them by default; mysql2 sends a Buffer parameter as X'..'; DuckDB read X'0102'
// as the text x0102 and 0x4142 as 0). It returns the literal's value, whether it is bytes, and
// how many tokens it spans: 0 when toks[i] starts no such literal.
func MySQLLiteral(toks []Token, i int) (value string, binary bool, n int) {
	t := toks[i]
	switch {
	case t.Kind == Word && strings.EqualFold(t.Text, "_binary") && i+1 < len(toks) && plainString(toks[i+1]):
		return MySQLStringValue(toks[i+1].Text), true, 2
	case plainString(t) && (t.Text[0] == '"' || strings.IndexByte(t.Text, '\\') >= 0):
		return MySQLStringValue(t.Text), false, 1
	case t.Kind == String && !t.Unterminated && len(t.Text) >= 3 && t.Text[0]|0x20 == 'x' && t.Text[1] == '\'':
		if v, ok := hexBytes(t.Text[2:len(t.Text)-1], false); ok {
			return v, true, 1
		}
	case t.Kind == Number && len(t.Text) > 2 && t.Text[0] == '0' && t.Text[1] == 'x':
		if v, ok := hexBytes(t.Text[2:], true); ok {
			return v, true, 1
		}
	}
	return "", false, 0
}

// hexBytes decodes the hex digits h; an odd count is refused, or, with pad (0x literals, as
// MySQL reads them), read with a 0 before it.
func hexBytes(h string, pad bool) (string, bool) {
	if len(h)%2 == 1 {
		if !pad {
			return "", false
		}
		h = "0" + h
	}
	out := make([]byte, len(h)/2)
	for i := range out {
		hi, ok1 := hexDigit(h[2*i])
		lo, ok2 := hexDigit(h[2*i+1])
		if !ok1 || !ok2 {
			return "", false
		}
		out[i] = hi<<4 | lo
	}
	return string(out), true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c|0x20 && c|0x20 <= 'f':
		return (c | 0x20) - 'a' + 10, true
	}
	return 0, false
}

// plainString: t is a whole '...' or "..." string without a prefix (N'..', X'..' are left
// alone). MySQL reads "..." as a string, as '...' (unless sql_mode has ANSI_QUOTES); standard SQL
// reads it as a name.
func plainString(t Token) bool {
	return t.Kind == String && !t.Unterminated && len(t.Text) >= 2 && (t.Text[0] == '\'' || t.Text[0] == '"') &&
		t.Text[len(t.Text)-1] == t.Text[0]
}

// MySQLStringValue is the value of the MySQL string literal lit ('...' or "..."), as MySQL
// reads it: its quote doubled is one quote; \0 \b \n \r \t \Z are NUL, backspace, newline, carriage return,
// tab and Ctrl-Z; \% and \_ keep their backslash (they escape LIKE's wildcards); a backslash
// before any other character is that character.
func MySQLStringValue(lit string) string {
	q, s := lit[0], lit[1:len(lit)-1]
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && i+1 < len(s) && s[i+1] == q:
			b.WriteByte(q)
			i++
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'Z':
				b.WriteByte(0x1a)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// StandardString writes v as a standard SQL string literal (quotes doubled, nothing else
// escaped).
func StandardString(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

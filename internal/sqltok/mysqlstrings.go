package sqltok

import "strings"

// MySQL clients that interpolate their parameters into a statement's text (PyMySQL,
// mysqlclient, mysql2's query with values, go-sql-driver with interpolateParams) write strings
// the MySQL way: 'O\'Brien', 'C:\\temp', 'a\nb', and bytes as _binary'...'. Engines that read
// SQL's standard literals (DuckDB, PostgreSQL) take a backslash as an ordinary character, so
// the first is a syntax error there and the others change. What follows finds such literals and
// their values, for an engine to write them its own way.

// MayHoldMySQLEscapes reports cheaply whether sql may hold a literal MySQLLiteral reads: it
// holds a backslash or an underscore (of _binary). Most statements cost this scan only.
func MayHoldMySQLEscapes(sql string) bool {
	return strings.IndexByte(sql, '\\') >= 0 || hasBinaryIntroducer(sql)
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
// an engine reading standard SQL would misread: a '...' string holding a backslash, or the
// introducer _binary and its '...' string. It returns the literal's value, whether it is bytes
// (_binary), and how many tokens it spans: 0 when toks[i] starts no such literal.
func MySQLLiteral(toks []Token, i int) (value string, binary bool, n int) {
	t := toks[i]
	if t.Kind == Word && strings.EqualFold(t.Text, "_binary") && i+1 < len(toks) && plainString(toks[i+1]) {
		return MySQLStringValue(toks[i+1].Text), true, 2
	}
	if plainString(t) && strings.IndexByte(t.Text, '\\') >= 0 {
		return MySQLStringValue(t.Text), false, 1
	}
	return "", false, 0
}

// plainString: t is a whole '...' string without a prefix (N'..', X'..' are left alone).
func plainString(t Token) bool {
	return t.Kind == String && !t.Unterminated && len(t.Text) >= 2 && t.Text[0] == '\'' && t.Text[len(t.Text)-1] == '\''
}

// MySQLStringValue is the value of the MySQL string literal lit ('...'), as MySQL reads it: a
// doubled quote is one quote; \0 \b \n \r \t \Z are NUL, backspace, newline, carriage return,
// tab and Ctrl-Z; \% and \_ keep their backslash (they escape LIKE's wildcards); a backslash
// before any other character is that character.
func MySQLStringValue(lit string) string {
	s := lit[1 : len(lit)-1]
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
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

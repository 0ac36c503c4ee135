package sqltok

import "strings"

// MySQL's executable comments: `/*! body */` is body to MySQL, and `/*!NNNNN body */` is body
// to a server whose version (major*10000 + minor*100 + patch) is at least NNNNN, a comment to
// an older one. mysqldump writes its session settings so (`/*!40101 SET NAMES utf8mb4 */`), and
// old scripts their MySQL-only clauses. MariaDB's own form, `/*M!NNNNNN body */`, is a comment
// to MySQL, and stays one.

// ExpandExecutableComments is sql as a MySQL server of version runs it: each executable
// comment whose version is at most version replaced by its body, each other one by a blank.
// Text without "/*!" comes back as it is.
func ExpandExecutableComments(sql string, version int) string {
	if !strings.Contains(sql, "/*!") {
		return sql
	}
	return expandExecutable(Tokenize(sql, MySQL), version, false)
}

// ExpandEveryExecutableComment is sql as any MySQL or MariaDB server might run it, for a check
// that must not miss what runs: every `/*!` comment and MariaDB's `/*M!` ones replaced by their
// bodies, whatever their version. otherEscapes reads the text as TokenizeOtherEscapes does
// (a session with NO_BACKSLASH_ESCAPES), where other quotes end strings and so other comments
// are comments.
func ExpandEveryExecutableComment(sql string, otherEscapes bool) string {
	if !strings.Contains(sql, "/*!") && !strings.Contains(sql, "/*M!") && !strings.Contains(sql, "/*m!") {
		return sql
	}
	toks := Tokenize(sql, MySQL)
	if otherEscapes {
		toks = TokenizeOtherEscapes(sql, MySQL)
	}
	return expandExecutable(toks, 1<<31-1, true)
}

func expandExecutable(toks []Token, version int, mariadb bool) string {
	var b strings.Builder
	for _, t := range toks {
		if mariadb && t.Kind == Comment && len(t.Text) >= 4 && (strings.HasPrefix(t.Text, "/*M!") || strings.HasPrefix(t.Text, "/*m!")) {
			t.Text = "/*!" + t.Text[4:]
		}
		body, ok := executableBody(t)
		switch {
		case !ok:
			b.WriteString(t.Text)
		case body.version <= version:
			b.WriteString(" " + body.text + " ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

type executable struct {
	version int // 0: none given
	text    string
}

// executableBody reads t when it is an executable comment: its version and its body.
func executableBody(t Token) (executable, bool) {
	if t.Kind != Comment || !strings.HasPrefix(t.Text, "/*!") || !strings.HasSuffix(t.Text, "*/") || len(t.Text) < 5 {
		return executable{}, false
	}
	inner := t.Text[3 : len(t.Text)-2]
	digits := 0
	for digits < len(inner) && digits < 6 && inner[digits] >= '0' && inner[digits] <= '9' {
		digits++
	}
	if digits < 5 { // MySQL reads a version only as five digits (six for 10.0 and later)
		return executable{text: inner}, true
	}
	v := 0
	for _, c := range inner[:digits] {
		v = v*10 + int(c-'0')
	}
	return executable{version: v, text: inner[digits:]}, true
}

// MySQLVersion is a version string's number as executable comments compare it: "8.0.11-x" is
// 80011; 0 when s does not start with major.minor.patch.
func MySQLVersion(s string) int {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 3 {
		return 0
	}
	n := [3]int{}
	for i, p := range parts {
		j := 0
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			n[i] = n[i]*10 + int(p[j]-'0')
			j++
		}
		if j == 0 {
			return 0
		}
	}
	return n[0]*10000 + n[1]*100 + n[2]
}

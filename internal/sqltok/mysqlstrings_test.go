package sqltok

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestMySQLStringValue: a string escaped as MySQL clients escape it reads back as itself, as one
// token; the escapes MySQL defines read as MySQL reads them.
func TestMySQLStringValue(t *testing.T) {
	for lit, want := range map[string]string{
		`'O\'Brien'`: "O'Brien", `'it''s'`: "it's", `'C:\\temp'`: `C:\temp`, `'a\nb\tc\rd\be\Zf\0g'`: "a\nb\tc\rd\be\x1af\x00g",
		`'\%\_'`: `\%\_`, `'\q\Q\"'`: `qQ"`, `''`: "", `'\\'`: `\`,
	} {
		if got := MySQLStringValue(lit); got != want {
			t.Errorf("MySQLStringValue(%s) = %q, want %q", lit, got, want)
		}
	}
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`, `"`, `\"`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.String().Draw(t, "v") + rapid.SampledFrom([]string{`\`, `'`, `"`, "\x00", "\n", "\x1a", "''"}).Draw(t, "special")
		lit := "'" + quote.Replace(v) + "'"
		toks := Tokenize("select "+lit+" x", MySQL)
		if len(toks) != 5 || toks[2].Text != lit {
			t.Fatalf("%s is not one token: %+v", lit, toks)
		}
		got, binary, n := MySQLLiteral(toks, 2)
		if strings.Contains(lit, `\`) && (n != 1 || binary || got != v) {
			t.Fatalf("MySQLLiteral(%s) = %q %v %d, want %q", lit, got, binary, n, v)
		}
		if got, binary, n := MySQLLiteral(Tokenize("_BINARY"+lit, MySQL), 0); n != 2 || !binary || got != v {
			t.Fatalf("MySQLLiteral(_BINARY%s) = %q %v %d", lit, got, binary, n)
		}
	})
}

// TestMySQLLiteralLeavesOthers: strings without a backslash, prefixed strings, double-quoted
// ones and an unterminated one are not MySQLLiteral's; the cheap check sees backslashes and
// _binary anywhere.
func TestMySQLLiteralLeavesOthers(t *testing.T) {
	for _, sql := range []string{`'plain'`, `N'a\'b'`, `X'4142'`, `"a\"b"`, `'open\'`, `_binary "x"`, `_binaryx'a'`} {
		toks := Tokenize(sql, MySQL)
		for i := range toks {
			if _, _, n := MySQLLiteral(toks, i); n != 0 {
				t.Errorf("%s: token %d %q read as a MySQL literal", sql, i, toks[i].Text)
			}
		}
	}
	for sql, want := range map[string]bool{`select 1`: false, `select 'a_b'`: false, `x\y`: true, `select _Binary'a'`: true, `a_b_c_binary`: true, `_bin`: false} {
		if got := MayHoldMySQLEscapes(sql); got != want {
			t.Errorf("MayHoldMySQLEscapes(%q) = %v, want %v", sql, got, want)
		}
	}
}

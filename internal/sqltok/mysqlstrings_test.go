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

// TestMySQLLiteralLeavesOthers: strings without a backslash, N'..', double-quoted and
// unterminated strings, and hex literals MySQL would refuse are not MySQLLiteral's; the cheap
// check sees backslashes, _binary, X' and 0x anywhere.
func TestMySQLLiteralLeavesOthers(t *testing.T) {
	for _, sql := range []string{`'plain'`, `N'a\'b'`, `'open\'`, `"open`, `_binaryx'a'`, `X'414'`, `0X41`, `x'4g'`} {
		toks := Tokenize(sql, MySQL)
		for i := range toks {
			if _, _, n := MySQLLiteral(toks, i); n != 0 {
				t.Errorf("%s: token %d %q read as a MySQL literal", sql, i, toks[i].Text)
			}
		}
	}
	for sql, want := range map[string]bool{`select 1`: false, `select 'a_b'`: false, `x\y`: true, `select _Binary'a'`: true, `a_b_c_binary`: true, `_bin`: false,
		`select max(a)`: false, `select X'41'`: true, `select 0x41`: true} {
		if got := MayHoldMySQLEscapes(sql); got != want {
			t.Errorf("MayHoldMySQLEscapes(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestMySQLDoubleQuotedStrings: MySQL reads "..." as a string (its default sql_mode): its
// value, with the double quote doubled or escaped.
func TestMySQLDoubleQuotedStrings(t *testing.T) {
	for sql, want := range map[string]string{`"abc"`: "abc", `"a\"b"`: `a"b`, `"it""s"`: `it"s`, `"it's"`: "it's", `"a\nb"`: "a\nb", `""`: ""} {
		v, binary, n := MySQLLiteral(Tokenize(sql, MySQL), 0)
		if n != 1 || binary || v != want {
			t.Errorf("MySQLLiteral(%s) = %q %v %d, want %q", sql, v, binary, n, want)
		}
	}
	if !MayHoldMySQLEscapes(`select "x"`) {
		t.Error(`MayHoldMySQLEscapes(select "x") = false`)
	}
}

// TestMySQLHexLiterals: X'..' and 0x.. are bytes, as MySQL reads them (an odd 0x is padded).
func TestMySQLHexLiterals(t *testing.T) {
	for sql, want := range map[string]string{`X'4142'`: "AB", `x'00ff'`: "\x00\xff", `x''`: "", `0x4142`: "AB", `0x141`: "\x01\x41"} {
		v, binary, n := MySQLLiteral(Tokenize(sql, MySQL), 0)
		if n != 1 || !binary || v != want {
			t.Errorf("MySQLLiteral(%s) = %q %v %d, want %q", sql, v, binary, n, want)
		}
	}
}

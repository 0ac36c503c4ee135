package sqltok

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestTokensAreWellFormed: whatever the input, the tokens cover it in order, only the last token
// can be unterminated (it runs to the end), only strings, quoted identifiers and block comments
// can be, and a run of ASCII blanks is one token.
func TestTokensAreWellFormed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sql := drawSQL(t)
		d := rapid.SampledFrom(allDialects).Draw(t, "dialect")
		toks := Tokenize(sql, d)
		var b strings.Builder
		for i, tok := range toks {
			if tok.Pos != b.Len() || tok.Text == "" {
				t.Fatalf("token %d %+v at byte %d", i, tok, b.Len())
			}
			b.WriteString(tok.Text)
			if tok.Unterminated && (i != len(toks)-1 || (tok.Kind != String && tok.Kind != QuotedIdent && tok.Kind != Comment)) {
				t.Fatalf("token %d of %d %+v is unterminated", i, len(toks), tok)
			}
			if i > 0 && tok.Kind == Whitespace && toks[i-1].Kind == Whitespace && isSpace(tok.Text[0]) && isSpace(toks[i-1].Text[0]) {
				t.Fatalf("blanks split in two tokens: %q %q", toks[i-1].Text, tok.Text)
			}
		}
		if b.String() != sql {
			t.Fatalf("tokens concatenate to %q", b.String())
		}
	})
}

func TestTokenKinds(t *testing.T) {
	type want struct {
		kind TokenKind
		text string
	}
	cases := []struct {
		sql  string
		d    Dialect
		toks []want
	}{
		{"a \t\n1 $1 ? (+", Generic, []want{{Word, "a"}, {Whitespace, " \t\n"}, {Number, "1"}, {Whitespace, " "}, {Param, "$1"},
			{Whitespace, " "}, {Param, "?"}, {Whitespace, " "}, {Punct, "("}, {Operator, "+"}}},
		{`'x''y' "i" /*c*/-- d`, Postgres, []want{{String, `'x''y'`}, {Whitespace, " "}, {QuotedIdent, `"i"`}, {Whitespace, " "},
			{Comment, "/*c*/"}, {Comment, "-- d"}}},
		{`"s" # c`, MySQL, []want{{String, `"s"`}, {Whitespace, " "}, {Comment, "# c"}}},
		{"1--1", MySQL, []want{{Number, "1"}, {Operator, "--"}, {Number, "1"}}},
		{"$t$a$t$ :n \xff\u00a0", Postgres, []want{{String, "$t$a$t$"}, {Whitespace, " "}, {Param, ":n"}, {Whitespace, " "},
			{Invalid, "\xff"}, {Whitespace, "\u00a0"}}},
		{"E'a\\'b' x'1f' 0x1F 1.5e-3", Postgres, []want{{String, "E'a\\'b'"}, {Whitespace, " "}, {String, "x'1f'"}, {Whitespace, " "},
			{Number, "0x1F"}, {Whitespace, " "}, {Number, "1.5e-3"}}},
		{"1_000 $a1$x$a1$ $_$y$_$", Postgres, []want{{Number, "1_000"}, {Whitespace, " "}, {String, "$a1$x$a1$"}, {Whitespace, " "},
			{String, "$_$y$_$"}}},
		{"é€", Generic, []want{{Word, "é"}, {Invalid, "€"}}},
	}
	for _, c := range cases {
		toks := Tokenize(c.sql, c.d)
		var got []want
		for _, tok := range toks {
			if tok.Unterminated {
				t.Errorf("%q: %+v is marked unterminated", c.sql, tok)
			}
			got = append(got, want{tok.Kind, tok.Text})
		}
		if len(got) != len(c.toks) {
			t.Errorf("%q: got %v, want %v", c.sql, got, c.toks)
			continue
		}
		for i := range got {
			if got[i] != c.toks[i] {
				t.Errorf("%q: token %d is %v %q, want %v %q", c.sql, i, got[i].kind, got[i].text, c.toks[i].kind, c.toks[i].text)
			}
		}
	}
	if TokenKind(len(kindNames)).String() != "?" || Invalid.String() != "invalid" || Kind(len(kindText)).String() != "other" {
		t.Error("kind names out of range")
	}
}

// TestExplainAndStartKinds pins the statements whose kind decides a read-only guardrail: an
// EXPLAIN that runs its statement is that statement.
func TestExplainAndStartKinds(t *testing.T) {
	for sql, want := range map[string]Kind{
		"start":                         KindOther,
		"start transaction read only":   KindTransaction,
		"starting":                      KindOther,
		"EXPLAIN DELETE FROM t":         KindExplain,
		"EXPLAIN ANALYZE DELETE FROM t": KindDelete,
		"explain analyse verbose update t set a = 1":                   KindUpdate,
		"EXPLAIN (ANALYZE) DELETE FROM t":                              KindDelete,
		"EXPLAIN (ANALYZE true, FORMAT JSON) INSERT INTO t VALUES (1)": KindInsert,
		"EXPLAIN (ANALYZE false) DELETE FROM t":                        KindExplain,
		"EXPLAIN (ANALYZE off, VERBOSE) DELETE FROM t":                 KindExplain,
		"EXPLAIN (VERBOSE, ANALYZE 0) DELETE FROM t":                   KindExplain,
		"EXPLAIN ANALYZE WITH x AS (SELECT 1) DELETE FROM t":           KindDelete,
		"EXPLAIN (FORMAT JSON) SELECT 1":                               KindExplain,
		"EXPLAIN ANALYZE":                                              KindExplain,
		"(((select 1)))":                                               KindSelect,
		"((":                                                           KindOther,
	} {
		if got := StatementKind(sql); got != want {
			t.Errorf("%q: %v, want %v", sql, got, want)
		}
	}
}

func TestNormalizeNeverEchoesUnreadableBytes(t *testing.T) {
	for sql, want := range map[string]string{
		"select \xff\xfe from t": "select ? ? from t",
		"select - 1, a - 1":      "select ?, a - ?",
		"x in (1, 2, 3)":         "x in (?)",
		"x in (1, y)":            "x in (?, y)",
		"select $1, :n, ?":       "select ?, ?, ?",
	} {
		if got := Normalize(sql); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", sql, got, want)
		}
	}
}

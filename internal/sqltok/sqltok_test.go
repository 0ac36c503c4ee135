package sqltok

import (
	"strings"
	"testing"
)

type tk struct {
	kind TokenKind
	text string
}

func sig(sql string, d Dialect) []tk {
	var out []tk
	for _, t := range Tokenize(sql, d) {
		if t.Significant() {
			out = append(out, tk{t.Kind, t.Text})
		}
	}
	return out
}

func TestTokenizeLiteralsAndComments(t *testing.T) {
	cases := []struct {
		name string
		sql  string
		d    Dialect
		want []tk
	}{
		{"doubled quote", `select 'it''s'`, Postgres, []tk{{Word, "select"}, {String, `'it''s'`}}},
		{"E string backslash", `select E'it\'s', 1`, Postgres, []tk{{Word, "select"}, {String, `E'it\'s'`}, {Punct, ","}, {Number, "1"}}},
		{"pg plain backslash is literal", `select 'a\', 'b'`, Postgres, []tk{{Word, "select"}, {String, `'a\'`}, {Punct, ","}, {String, `'b'`}}},
		{"mysql backslash", `select 'a\'b', "c\"d"`, MySQL, []tk{{Word, "select"}, {String, `'a\'b'`}, {Punct, ","}, {String, `"c\"d"`}}},
		{"dollar", `select $$a;'b$$, $fn$ x $$ y $fn$`, Postgres, []tk{{Word, "select"}, {String, `$$a;'b$$`}, {Punct, ","}, {String, `$fn$ x $$ y $fn$`}}},
		{"params", `select $1, ?, :name, a::int`, Generic, []tk{{Word, "select"}, {Param, "$1"}, {Punct, ","}, {Param, "?"}, {Punct, ","}, {Param, ":name"}, {Punct, ","}, {Word, "a"}, {Operator, "::"}, {Word, "int"}}},
		{"pg ? is operator", `select j ? 'k'`, Postgres, []tk{{Word, "select"}, {Word, "j"}, {Operator, "?"}, {String, "'k'"}}},
		{"numbers", `select 1, 1.5, .5, 1e10, 2.5E-3, 0x1F, 1_000, 3.`, Generic, []tk{{Word, "select"}, {Number, "1"}, {Punct, ","}, {Number, "1.5"}, {Punct, ","}, {Number, ".5"}, {Punct, ","}, {Number, "1e10"}, {Punct, ","}, {Number, "2.5E-3"}, {Punct, ","}, {Number, "0x1F"}, {Punct, ","}, {Number, "1_000"}, {Punct, ","}, {Number, "3."}}},
		{"nested comment", `a /* x /* y */ z */ b`, Postgres, []tk{{Word, "a"}, {Word, "b"}}},
		{"mysql comment not nested", `a /* x /* y */ b`, MySQL, []tk{{Word, "a"}, {Word, "b"}}},
		{"mysql hash comment", "a # c\nb", MySQL, []tk{{Word, "a"}, {Word, "b"}}},
		{"pg hash is operator", "a # b", Postgres, []tk{{Word, "a"}, {Operator, "#"}, {Word, "b"}}},
		{"line comment", "a -- c ; 'x\nb", Generic, []tk{{Word, "a"}, {Word, "b"}}},
		{"quoted idents", "select \"a\"\"b\", `c`", Generic, []tk{{Word, "select"}, {QuotedIdent, `"a""b"`}, {Punct, ","}, {QuotedIdent, "`c`"}}},
		{"prefixed strings", `select X'1F', N'abc', U&'d\0061t', B'101'`, Postgres, []tk{{Word, "select"}, {String, "X'1F'"}, {Punct, ","}, {String, "N'abc'"}, {Punct, ","}, {String, `U&'d\0061t'`}, {Punct, ","}, {String, "B'101'"}}},
		{"operator before comment", "a+-- c\nb", Generic, []tk{{Word, "a"}, {Operator, "+"}, {Word, "b"}}},
		{"unicode ident", "select größe from t", Generic, []tk{{Word, "select"}, {Word, "größe"}, {Word, "from"}, {Word, "t"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sig(c.sql, c.d)
			if len(got) != len(c.want) {
				t.Fatalf("%q: got %v, want %v", c.sql, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("%q: token %d: got %v, want %v (all %v)", c.sql, i, got[i], c.want[i], got)
				}
			}
		})
	}
}

func TestTokenizeUnterminatedIsOneToken(t *testing.T) {
	for _, sql := range []string{`select 'abc`, `select "abc`, `select $$abc`, `select /* abc`, "select `abc", `select E'ab\'`} {
		toks := Tokenize(sql, Generic)
		last := toks[len(toks)-1]
		if !last.Unterminated || last.Pos != 7 {
			t.Errorf("%q: last token %+v, want one unterminated token from byte 7", sql, last)
		}
	}
}

func TestSplit(t *testing.T) {
	sql := "select 1; select ';' -- ;\n; /* ; */ insert into t values ($$;$$);;  "
	got := Split(sql)
	want := []string{"select 1", "select ';' -- ;", "/* ; */ insert into t values ($$;$$)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Split = %q, want %q", got, want)
	}
	if got := Split("  -- only a comment\n ; "); len(got) != 0 {
		t.Fatalf("Split of comments = %q, want none", got)
	}
}

func TestStatementKind(t *testing.T) {
	cases := map[string]Kind{
		"SELECT 1":                                              KindSelect,
		"  (select 1) union (select 2)":                         KindSelect,
		"/* hi */ -- x\n insert into t values (1)":              KindInsert,
		"REPLACE INTO t VALUES (1)":                             KindInsert,
		"update t set a = 1":                                    KindUpdate,
		"MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE": KindUpdate,
		"delete from t":                                         KindDelete,
		"with x as (select 1) delete from t":                    KindDelete,
		"with x as (delete from t returning *) select * from x": KindSelect,
		"WITH RECURSIVE r(n) AS (SELECT 1) SELECT * FROM r":     KindSelect,
		"create table t (a int)":                                KindDDL,
		"DROP TABLE t":                                          KindDDL,
		"truncate t":                                            KindDDL,
		"grant select on t to u":                                KindDDL,
		"set search_path = x":                                   KindSet,
		"use db":                                                KindSet,
		"show tables":                                           KindShow,
		"describe t":                                            KindShow,
		"explain select 1":                                      KindExplain,
		"explain analyze select 1":                              KindSelect,
		"EXPLAIN ANALYZE DELETE FROM t":                         KindDelete,
		"explain (analyze, format json) update t set a = 1":     KindUpdate,
		"explain (analyze false) delete from t":                 KindExplain,
		"explain verbose insert into t values (1)":              KindExplain,
		"explain analyze with x as (select 1) insert into t select * from x": KindInsert,
		"begin":             KindTransaction,
		"START TRANSACTION": KindTransaction,
		"commit":            KindTransaction,
		"call p()":          KindOther,
		"":                  KindOther,
		"'select'":          KindOther,
	}
	for sql, want := range cases {
		if got := StatementKind(sql); got != want {
			t.Errorf("StatementKind(%q) = %v, want %v", sql, got, want)
		}
	}
	if got := StatementKinds("select 1; /* ; */ drop table t; begin"); len(got) != 3 || got[1] != KindDDL || got[2] != KindTransaction {
		t.Fatalf("StatementKinds = %v", got)
	}
}

func TestIsNonDeterministic(t *testing.T) {
	yes := []string{
		"select now()", "SELECT RANDOM() ", "select current_timestamp", "select gen_random_uuid()",
		"select uuid()", "insert into t values (nextval('s'))", "select * from t where d > CURRENT_DATE",
		"select rand()", "select localtimestamp",
	}
	no := []string{
		"select 1", "select 'now()'", "select \"now\" from t", "select t.now from t", "select now from t",
		"-- random()\nselect 1", "select random_col from t",
	}
	for _, s := range yes {
		if !IsNonDeterministic(s) {
			t.Errorf("IsNonDeterministic(%q) = false, want true", s)
		}
	}
	if IsNonDeterministicDialect("select 'x' # now()\n", MySQL) || !IsNonDeterministic("select 'x' # now()\n") {
		t.Error("IsNonDeterministicDialect must apply the dialect's comment rules")
	}
	for _, s := range no {
		if IsNonDeterministic(s) {
			t.Errorf("IsNonDeterministic(%q) = true, want false", s)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"SELECT  a, b FROM t WHERE x = 'abc' AND y=42 -- c": "select a, b from t where x = ? and y = ?",
		"select * from t where id in (1, 2, 3)":             "select * from t where id in (?)",
		"select * from t where id IN ($1,$2)":               "select * from t where id in (?)",
		"select a - 1, -5, f(-2.5e3) from t where x > -1":   "select a - ?, ?, f (?) from t where x > ?",
		"select t.\"Col\" from s.t limit 10":                "select t.\"Col\" from s.t limit ?",
		"insert into t values (E'x\\'y', $$z$$)":            "insert into t values (?, ?)",
	}
	for in, want := range cases {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	// MySQL's "--" before a non-blank is two operators; a quoted name keeps its dashes.
	for in, want := range map[string]string{"select 1--1": "select ? - - ?", "select a---b": "select a - - - b", "select `a--b`": "select `a--b`"} {
		if got := NormalizeDialect(in, MySQL); got != want {
			t.Errorf("NormalizeDialect(%q, MySQL)\n got %q\nwant %q", in, got, want)
		}
	}
	if Digest("select 1") != Digest("SELECT   2") || Digest("select 1") == Digest("select 1 from t") {
		t.Fatal("Digest must ignore literals and whitespace but not structure")
	}
	if len(Digest("x")) != 16 {
		t.Fatalf("Digest length %d", len(Digest("x")))
	}
}

// FuzzTokenize: Tokenize never panics, never loses or invents a byte, and its positions are exact.
func FuzzTokenize(f *testing.F) {
	seeds := []string{
		"select 'a''b', E'\\'', $$x$$, $t$ y $t$, 1e5, 0x1f, /* /* */ */ -- c\n # d\n `q` \"r\" ? :n $1",
		"'unterminated", "/* open", "$tag$ open", "\xff\xfe select", "a::int", "x'1", "u&'", "1..5",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		for _, d := range []Dialect{Generic, Postgres, MySQL, Trino} {
			var b strings.Builder
			for _, tok := range Tokenize(sql, d) {
				if tok.Pos != b.Len() || tok.Text == "" {
					t.Fatalf("%v: token %+v at wrong position %d", d, tok, b.Len())
				}
				b.WriteString(tok.Text)
			}
			if b.String() != sql {
				t.Fatalf("%v: concatenated tokens %q != input %q", d, b.String(), sql)
			}
			n := NormalizeDialect(sql, d)
			if again := NormalizeDialect(n, d); again != n {
				t.Fatalf("%v: Normalize is not idempotent: %q -> %q -> %q", d, sql, n, again)
			}
			_ = SplitDialect(sql, d)
			_ = StatementKindDialect(sql, d)
		}
		_ = IsNonDeterministic(sql)
	})
}

func BenchmarkNormalize(b *testing.B) {
	sql := "SELECT o.id, c.name, sum(l.amount) FROM orders o JOIN customers c ON c.id = o.customer_id " +
		"JOIN lines l ON l.order_id = o.id WHERE o.created_at >= '2026-01-01' AND c.country IN ('DE', 'FR', 'IT') " +
		"AND l.amount > 100.50 /* big ones */ GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 50"
	b.SetBytes(int64(len(sql)))
	for b.Loop() {
		_ = Normalize(sql)
	}
}

// TestTokenIsWord: a word token is any of the words in any case; a quoted name, a string or a
// number spelling one is not.
func TestTokenIsWord(t *testing.T) {
	toks := SignificantTokens(`VALUES "values" 'values' value 1`, Generic)
	for i, want := range []bool{true, false, false, true, false} {
		if got := toks[i].IsWord("value", "values"); got != want {
			t.Errorf("%q.IsWord(value, values) = %v, want %v", toks[i].Text, got, want)
		}
	}
	if toks[0].IsWord() {
		t.Error("IsWord() of no words is true")
	}
}

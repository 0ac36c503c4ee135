package sqltok

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestAnalyzeMatchesTheStringFunctions: reading a request once gives what each function that
// reads it again would: the split, each statement's kind and non-determinism, the parameter
// count and the digest.
func TestAnalyzeMatchesTheStringFunctions(t *testing.T) {
	words := append([]string{"select now()", "delete from t", "with x as (select 1) delete from t", "explain analyze drop table t",
		"insert into t values (1)", "random()", "t.now", "current_date", "begin"}, sqlPieces...)
	rapid.Check(t, func(t *rapid.T) {
		sql := ""
		for _, p := range rapid.SliceOf(rapid.SampledFrom(words)).Draw(t, "pieces") {
			sql += p
		}
		for _, d := range allDialects {
			a := Analyze(sql, d)
			if got, want := fmt.Sprintf("%q", a.Texts()), fmt.Sprintf("%q", SplitDialect(sql, d)); got != want {
				t.Fatalf("%v: Analyze(%q) statements %s, SplitDialect %s", d, sql, got, want)
			}
			for _, st := range a.Statements {
				if k := StatementKindDialect(st.Text, d); st.Kind != k {
					t.Fatalf("%v: statement %q of %q: kind %v, StatementKindDialect %v", d, st.Text, sql, st.Kind, k)
				}
				if n := IsNonDeterministicDialect(st.Text, d); st.NonDeterministic != n {
					t.Fatalf("%v: statement %q of %q: non-deterministic %v, IsNonDeterministicDialect %v", d, st.Text, sql, st.NonDeterministic, n)
				}
			}
			if a.Params != CountParams(sql, d) || a.Fingerprint() != DigestDialect(sql, d) || a.Normalized() != NormalizeDialect(sql, d) {
				t.Fatalf("%v: Analyze(%q): params %d, fingerprint %s, normalized %q", d, sql, a.Params, a.Fingerprint(), a.Normalized())
			}
		}
	})
}

func TestAnalyzeTokenizesOnce(t *testing.T) {
	var n int64
	stop := CountTokenize(&n)
	a := Analyze("select now(); /* c */ delete from t where id = $1", Postgres)
	_, _ = a.Fingerprint(), a.Texts()
	stop()
	if n != 1 {
		t.Fatalf("Analyze and its methods tokenized %d times, want 1", n)
	}
	if len(a.Statements) != 2 || a.Statements[0].Kind != KindSelect || !a.Statements[0].NonDeterministic ||
		a.Statements[1].Kind != KindDelete || a.Statements[1].NonDeterministic || a.Params != 1 {
		t.Fatalf("Analyze: %+v", a)
	}
}

// numberPieces add numbers in every position the lexers care about to sqlPieces.
var numberPieces = append([]string{"12", "7", "0", "1.5", ".5", "1e5", "1E-3", "0x1F", "0b1", "1_000", "t1", "a$1",
	"-", "+", "in (", ", ", ")", "aid = ", "..", "é1"}, sqlPieces...)

// TestNumberShapeNormalizesAlike: a statement and its AppendNumberShape normalize alike in every
// dialect, so statements of one shape share one memoized normalization.
func TestNumberShapeNormalizesAlike(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sql := strings.Join(rapid.SliceOf(rapid.SampledFrom(numberPieces)).Draw(t, "pieces"), "")
		shape := string(AppendNumberShape(nil, sql))
		for _, d := range allDialects {
			if got, want := NormalizeDialect(shape, d), NormalizeDialect(sql, d); got != want {
				t.Fatalf("%v: %q normalizes to %q, its shape %q to %q", d, sql, want, shape, got)
			}
		}
	})
}

// TestSameNumberShapeIsAppendNumberShape: SameNumberShape says two statements have one shape
// exactly where AppendNumberShape writes them alike: statements of every piece, and the same
// statement with its digit runs drawn again (some empty), a digit or a quote put in somewhere.
func TestSameNumberShapeIsAppendNumberShape(t *testing.T) {
	runs := regexp.MustCompile(`[0-9]+`)
	rapid.Check(t, func(t *rapid.T) {
		a := strings.Join(rapid.SliceOf(rapid.SampledFrom(numberPieces)).Draw(t, "pieces"), "")
		var b string
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0:
			b = runs.ReplaceAllStringFunc(a, func(string) string { return rapid.StringMatching(`[0-9]{0,6}`).Draw(t, "run") })
		case 1:
			at := rapid.IntRange(0, len(a)).Draw(t, "at")
			b = a[:at] + rapid.SampledFrom([]string{"7", `"`, "`", "x", " "}).Draw(t, "put") + a[at:]
		default:
			b = strings.Join(rapid.SliceOf(rapid.SampledFrom(numberPieces)).Draw(t, "other"), "")
		}
		if rapid.Bool().Draw(t, "swap") {
			a, b = b, a
		}
		want := string(AppendNumberShape(nil, a)) == string(AppendNumberShape(nil, b))
		if got := SameNumberShape(a, b); got != want {
			t.Fatalf("SameNumberShape(%q, %q) = %v; their shapes %q and %q", a, b, got, AppendNumberShape(nil, a), AppendNumberShape(nil, b))
		}
	})
}

// TestSameTextIsEqual: SameText is ==, on one string, equal copies, and texts that differ
// anywhere (at the end, before the last eight bytes, in length).
func TestSameTextIsEqual(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.StringMatching(`[a-c 0-9]{0,20}`).Draw(t, "a")
		var b string
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0:
			b = a
		case 1:
			b = strings.Clone(a)
		case 2: // one byte other, anywhere
			if a == "" {
				break
			}
			at := rapid.IntRange(0, len(a)-1).Draw(t, "at")
			b = a[:at] + "x" + a[at+1:]
		default:
			b = rapid.StringMatching(`[a-c 0-9]{0,20}`).Draw(t, "b")
		}
		if got := SameText(a, b); got != (a == b) {
			t.Fatalf("SameText(%q, %q) = %v", a, b, got)
		}
	})
}

// TestNumbersStandAloneMakesSameButDigitsSameShape: a text whose numbers stand alone has the
// number shape of every text SameButDigits finds alike with it.
func TestNumbersStandAloneMakesSameButDigitsSameShape(t *testing.T) {
	for s, want := range map[string]bool{
		"SELECT abalance FROM pgbench_accounts WHERE aid = 12345;": true, "SELECT 1": true, "a = 1.5, -2": true, "no digits": true,
		"SELECT * FROM t1": false, "x = 1e5": false, "1_000": false, "a$1": false, `"t" = 1`: false, "`t` = 1": false, "é1": false,
	} {
		if NumbersStandAlone(s) != want {
			t.Errorf("NumbersStandAlone(%q) = %v", s, !want)
		}
	}
	runs := regexp.MustCompile(`[0-9]+`)
	rapid.Check(t, func(t *rapid.T) {
		a := strings.Join(rapid.SliceOf(rapid.SampledFrom(numberPieces)).Draw(t, "pieces"), "")
		b := runs.ReplaceAllStringFunc(a, func(string) string { return rapid.StringMatching(`[0-9]{1,6}`).Draw(t, "run") })
		if rapid.Bool().Draw(t, "other") {
			b = strings.Join(rapid.SliceOf(rapid.SampledFrom(numberPieces)).Draw(t, "otherPieces"), "")
		}
		if NumbersStandAlone(a) && SameButDigits(a, b) && !SameNumberShape(a, b) {
			t.Fatalf("%q: numbers stand alone, and %q differs from it only in digits, but their shapes are %q and %q", a, b, AppendNumberShape(nil, a), AppendNumberShape(nil, b))
		}
	})
}

// TestNextDigitIsTheFirstDigit: nextDigit (eight bytes at a time) finds what a byte-by-byte
// search finds, on any bytes (top bits, digits' neighbours '/' and ':') from any start.
func TestNextDigitIsTheFirstDigit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.OneOf(rapid.Byte(), rapid.SampledFrom([]byte("/0189:a \x80\xb0\xb9\xff")))).Draw(t, "bytes")
		s := string(b)
		from := rapid.IntRange(0, len(s)).Draw(t, "from")
		want := from
		for want < len(s) && (s[want] < '0' || s[want] > '9') {
			want++
		}
		if got := nextDigit(s, from); got != want {
			t.Fatalf("nextDigit(%q, %d) = %d, want %d", s, from, got, want)
		}
	})
}

func TestNumberShape(t *testing.T) {
	for sql, want := range map[string]string{
		"SELECT abalance FROM pgbench_accounts WHERE aid = 12345;": "SELECT abalance FROM pgbench_accounts WHERE aid = 0;",
		"select t1.a from t1 where x in (1, 22) and y = 1.5":       "select t1.a from t1 where x in (0, 0) and y = 0.0",
		"select $1, 1e5, 1_000, 0x1F":                              "select $1, 1e5, 1_000, 0x1F",
		`select "c 1" from t where a = 2`:                          `select "c 1" from t where a = 2`,
	} {
		if got := string(AppendNumberShape([]byte("kept:"), sql)); got != "kept:"+want {
			t.Errorf("AppendNumberShape(kept:, %q) = %q, want kept:%q", sql, got, want)
		}
	}
}

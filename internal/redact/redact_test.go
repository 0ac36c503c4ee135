package redact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/sqltok"
	"pgregory.net/rapid"
)

// literal is one generated value: how it is written in SQL and the secret it carries.
type literal struct {
	sql    string
	secret string
}

// marker makes every secret findable and impossible to confuse with the query's skeleton.
const marker = "ZQX"

func genStringLiteral(d sqltok.Dialect) *rapid.Generator[literal] {
	return rapid.Custom(func(t *rapid.T) literal {
		body := rapid.StringOfN(rapid.RuneFrom([]rune("abc XYZ'\\\"%_;-/*$é0123456789")), 0, 12, -1).Draw(t, "body")
		secret := marker + body
		style := rapid.IntRange(0, 2).Draw(t, "style")
		switch {
		case d == sqltok.MySQL:
			esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret)
			return literal{"'" + esc + "'", secret}
		case style == 0 && d == sqltok.Postgres:
			esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret)
			return literal{"E'" + esc + "'", secret}
		case style == 1 && d == sqltok.Postgres && !strings.Contains(secret, "$q$"):
			return literal{"$q$" + secret + "$q$", secret}
		default:
			return literal{"'" + strings.ReplaceAll(secret, "'", "''") + "'", secret}
		}
	})
}

func genNumberLiteral() *rapid.Generator[literal] {
	return rapid.Custom(func(t *rapid.T) literal {
		n := rapid.Int64Range(1_000_000, 1<<53).Draw(t, "n")
		s := fmt.Sprint(n)
		switch rapid.IntRange(0, 3).Draw(t, "form") {
		case 1:
			s += "." + fmt.Sprint(rapid.IntRange(1000, 99999).Draw(t, "frac"))
		case 2:
			s += "e" + fmt.Sprint(rapid.IntRange(10, 99).Draw(t, "exp"))
		case 3:
			return literal{"-" + s, s}
		}
		return literal{s, s}
	})
}

// genQuery builds a query from a template whose holes are filled with generated literals.
func genQuery(t *rapid.T, d sqltok.Dialect, label string) (sql string, lits []literal) {
	templates := []string{
		"SELECT a, b FROM t WHERE a = %s AND b > %s",
		"insert into t (a, b) values (%s, %s)",
		"update t set a = %s where id in (%s, 1, 2)",
		"select * from t where x like %s -- trailing\n and y <> %s",
		"delete from t where a = %s or /* c */ b = %s",
		"select f(%s) + %s from t",
	}
	tpl := rapid.SampledFrom(templates).Draw(t, label+"tpl")
	args := make([]any, 2)
	for i := range args {
		var l literal
		if rapid.Bool().Draw(t, label+"kind") {
			l = genStringLiteral(d).Draw(t, label+"str")
		} else {
			l = genNumberLiteral().Draw(t, label+"num")
		}
		lits = append(lits, l)
		args[i] = l.sql
	}
	return fmt.Sprintf(tpl, args...), lits
}

var dialects = []sqltok.Dialect{sqltok.Generic, sqltok.Postgres, sqltok.MySQL, sqltok.Trino}

func TestMaskLiteralsLeavesNoLiteral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom(dialects).Draw(t, "dialect")
		sql, lits := genQuery(t, d, "")
		// Engines quote values raw; a value holding its own quote character cannot be
		// delimited in free text, so the error-text secrets leave quotes and backslashes out.
		plain := strings.NewReplacer("'", "", `"`, "", `\`, "", "$", "")
		errText := fmt.Sprintf(`ERROR: invalid input syntax for type integer: "%s" Key (id)=(%s) for '%s' value %s`,
			plain.Replace(lits[0].secret), plain.Replace(lits[1].secret), plain.Replace(lits[1].secret), asValue(lits[1], plain))
		out := Apply(MaskLiterals, d, Query{SQL: sql, Error: errText, RoutingTrace: []string{"rule matched x = '" + lits[0].secret + "'"}})
		all := out.SQL + "\n" + out.Error + "\n" + strings.Join(out.RoutingTrace, "\n")
		for _, l := range lits {
			if strings.Contains(strings.ToLower(all), strings.ToLower(l.secret)) {
				t.Fatalf("literal %q survived:\nsql: %s\nout: %s", l.secret, sql, all)
			}
		}
		if strings.Contains(strings.ToLower(all), strings.ToLower(marker)) {
			t.Fatalf("part of a literal survived:\nsql: %s\nout: %s", sql, all)
		}
	})
}

func TestMetadataKeepsNoText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sql, _ := genQuery(t, sqltok.Generic, "")
		out := Apply(Metadata, sqltok.Generic, Query{SQL: sql, Error: "boom " + sql, RoutingTrace: []string{"x"}})
		if out.SQL != "" || out.Error != "" || out.RoutingTrace != nil || out.Digest == "" {
			t.Fatalf("metadata kept text: %+v", out)
		}
	})
}

func TestQueriesDifferingOnlyInLiteralsShareADigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom(dialects).Draw(t, "dialect")
		tplT := rapid.IntRange(0, 5).Draw(t, "tpl")
		templates := []string{
			"SELECT a, b FROM t WHERE a = %s AND b > %s",
			"insert into t (a, b) values (%s, %s)",
			"update t set a = %s where id in (%s, 1, 2)",
			"select * from t where x like %s -- trailing\n and y <> %s",
			"delete from t where a = %s or /* c */ b = %s",
			"select f(%s) + %s from t",
		}
		fill := func(label string) string {
			args := make([]any, 2)
			for i := range args {
				if rapid.Bool().Draw(t, label+"kind") {
					args[i] = genStringLiteral(d).Draw(t, label+"s").sql
				} else {
					args[i] = genNumberLiteral().Draw(t, label+"n").sql
				}
			}
			return fmt.Sprintf(templates[tplT], args...)
		}
		a, b := fill("a"), fill("b")
		ra := Apply(MaskLiterals, d, Query{SQL: a})
		rb := Apply(MaskLiterals, d, Query{SQL: b})
		if ra.Digest != rb.Digest || ra.SQL != rb.SQL {
			t.Fatalf("different digests for queries differing in literals:\n%s -> %s\n%s -> %s", a, ra.SQL, b, rb.SQL)
		}
	})
}

func TestPolicies(t *testing.T) {
	q := Query{SQL: "select * from t where name = 'bob'", Error: `duplicate key value violates unique constraint "t_pkey" DETAIL: Key (id)=(42) already exists.`, RoutingTrace: []string{"group=adhoc"}}
	none := Apply(None, sqltok.Postgres, q)
	if none.SQL != q.SQL || none.Error != q.Error || none.RoutingTrace[0] != "group=adhoc" {
		t.Fatalf("none changed the record: %+v", none)
	}
	masked := Apply(MaskLiterals, sqltok.Postgres, q)
	if masked.SQL != "select * from t where name = ?" {
		t.Fatalf("masked SQL %q", masked.SQL)
	}
	if want := `duplicate key value violates unique constraint "?" DETAIL: Key (id)=(?) already exists.`; masked.Error != want {
		t.Fatalf("masked error %q, want %q", masked.Error, want)
	}
	if masked.Digest != none.Digest || masked.Digest != sqltok.Digest("select * from t where name = 'alice'") {
		t.Fatal("digest must not depend on the policy or on literals")
	}
	if p, err := ParsePolicy(""); err != nil || p != MaskLiterals {
		t.Fatalf("ParsePolicy(\"\") = %v, %v", p, err)
	}
	if _, err := ParsePolicy("everything"); err == nil || !strings.Contains(err.Error(), "everything") {
		t.Fatalf("ParsePolicy of a bad name: %v", err)
	}
}

func TestMaskText(t *testing.T) {
	cases := map[string]string{
		"Duplicate entry 'x@y.com' for key 'PRIMARY'":   "Duplicate entry '?' for key '?'",
		"value 12345 out of range for t1 in v2.3":       "value ? out of range for t1 in v2.3",
		"line 1:8: Column 'secret' cannot be resolved":  "line ?:?: Column '?' cannot be resolved",
		"unterminated 'abc":                             "unterminated '?",
		"value -3.5e10 is bad":                          "value -? is bad",
		"syntax error near 'WHERE x = 'abc'' at line 1": "syntax error near '?' at line ?",
		"body $f$ secret $f$ end":                       "body $?$ end",
	}
	for in, want := range cases {
		if got := MaskText(in); got != want {
			t.Errorf("MaskText(%q) = %q, want %q", in, got, want)
		}
	}
}

// asValue writes l as an engine would in a message: numbers bare, strings in single quotes.
func asValue(l literal, plain *strings.Replacer) string {
	if strings.HasSuffix(l.sql, l.secret) && !strings.ContainsAny(l.sql, "'$") {
		return l.sql
	}
	return "'" + plain.Replace(l.secret) + "'"
}

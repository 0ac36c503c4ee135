package redact

import (
	"slices"
	"testing"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// The routing trace is masked step by step, not dropped: an operator still reads which router
// sent the query where, without the values it matched.
func TestMaskLiteralsKeepsEveryRoutingStep(t *testing.T) {
	trace := []string{"sql: matched -> adhoc (tenant = 'acme-secret')", "header: no (x-team 42 absent)"}
	got := Apply(MaskLiterals, sqltok.Postgres, Query{SQL: "select 1", RoutingTrace: trace}).RoutingTrace
	want := []string{"sql: matched -> adhoc (tenant = '?')", "header: no (x-team ? absent)"}
	if !slices.Equal(got, want) {
		t.Fatalf("masked trace %q, want %q", got, want)
	}
	if got := Apply(MaskLiterals, sqltok.Postgres, Query{SQL: "select 1"}).RoutingTrace; got != nil {
		t.Fatalf("a query without a trace got one: %q", got)
	}
}

// Error texts whose quoting the ordinary cases do not reach.
func TestMaskTextEdges(t *testing.T) {
	cases := map[string]string{
		// MySQL's echo of a statement cut off before " at line N": the rest is the statement.
		"You have an error in your SQL syntax near 'password = 's3cret": "You have an error in your SQL syntax near '?",
		// A dollar sign that opens no dollar quote is text; the number after it is a value.
		"price $5 over budget": "price $? over budget",
		// An empty dollar-quoted string ends where it ends.
		"value $f$$f$ then 7": "value $?$ then ?",
		// An unterminated dollar quote hides the rest, as an unterminated quote does.
		"body $f$ never closed, secret": "body $?$",
		// A doubled quote is an escaped one: the value goes on past it.
		"value 'it''s secret' end": "value '?' end",
		// Dollar-quote tags: letters (a to z), underscores, and digits after the first.
		"body $a_z9$ secret $a_z9$ end": "body $?$ end",
		// Positional parameters are not tags: $1$ opens nothing, and neither does "$5 and $".
		"use $1$ here":      "use $?$ here",
		"between $5 and $6": "between $? and $?",
		"total $abc":        "total $abc",
		// A parenthesized list that never closes is masked to the end; a quoted ) does not close it.
		"Key (id)=(5, 'x":         "Key (id)=(?)",
		"Key (id)=(5":             "Key (id)=(?)",
		"Key (a)=(')', 5) exists": "Key (a)=(?) exists",
		// A number that starts the text is a value; digits after a non-ASCII letter are a name.
		"42 rows":              "? rows",
		"table tÀ1 is missing": "table tÀ1 is missing",
		// Signed exponents belong to their number; a minus between numbers does not.
		"ratio 2E-3 and 1.5e+10 out of range": "ratio ? and ? out of range",
		"range 5-10 invalid":                  "range ?-? invalid",
		"code 9":                              "code ?",
		"columns a1 and z9 missing":           "columns a1 and z9 missing",
		// A trailing = opens no parenthesized list.
		"expected a value after =": "expected a value after =",
	}
	for in, want := range cases {
		if got := MaskText(in); got != want {
			t.Errorf("MaskText(%q) = %q, want %q", in, got, want)
		}
	}
}

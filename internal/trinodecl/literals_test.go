package trinodecl

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/sqltok"
)

func TestLiteralItemTypes(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"select 'x', 'abc' a, '' e, 'it''s', 'é' as u", "[varchar(1) varchar(3) varchar(0) varchar(4) varchar(1)]"},
		{"select null, null n, a, 'x' || 'y' from t", "[unknown unknown  ]"},
		{"select 1.5, 123.45, 0.5 z, .25, -1.50, 007.10, 1e0, 2.5E-3, 1, 0.0", "[decimal(2,1) decimal(5,2) decimal(1,1) decimal(2,2) decimal(3,2) decimal(3,2) double double  decimal(1,1)]"},
		{"select time '01:02:03.456', time '01:02:03' b, time 'x'", "[time(3) time(0) ]"},
		{"select uuid '6ccd780c-baba-1026-9564-5b8c656024db' u, json '{\"a\": 1}'", "[uuid json]"},
		{"select interval '2' day, interval '3' hour h, interval '1' year, interval '1-2' year to month, interval '1 02:03:04' day to second",
			"[interval day to second interval day to second interval year to month interval year to month interval day to second]"},
		{"select 1, a from t where b = 'x'", "[]"},
		{"select *, 'x' from t", "[]"},
	} {
		if got := fmt.Sprint(ItemTypes(c.sql)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}

func TestIntervalLiteral(t *testing.T) {
	for _, c := range []struct{ lit, want string }{
		{"interval '2' day", "2 00:00:00.000"},
		{"interval '3' hour", "0 03:00:00.000"},
		{"interval '90' minute", "0 01:30:00.000"},
		{"interval '1.5' second", "0 00:00:01.500"},
		{"interval '-2' day", "-2 00:00:00.000"},
		{"interval '1 02:03:04.5' day to second", "1 02:03:04.500"},
		{"interval '2 03' day to hour", "2 03:00:00.000"},
		{"interval '03:04' hour to minute", "0 03:04:00.000"},
		{"interval '1' year", "1-0"},
		{"interval '14' month", "1-2"},
		{"interval '1-2' year to month", "1-2"},
		{"interval '-1-2' year to month", "-1-2"},
		{"interval 'x' day", ""},
		{"interval '2' fortnight", ""},
		{"interval '1 02' hour to day", ""},
		{"interval '1:2:3' hour to minute", ""},
	} {
		got, _, ok := IntervalLiteral(sqltok.SignificantTokens(c.lit, sqltok.Trino))
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.lit, got, c.want)
		}
	}
}

// A decimal literal's type is its digits but leading zeros (at least one) and those after its
// point, whatever the digits.
func TestDecimalLiteralTypes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zeros := strings.Repeat("0", rapid.IntRange(0, 3).Draw(t, "zeros"))
		whole := rapid.StringMatching(`([1-9][0-9]{0,10})?`).Draw(t, "whole")
		fraction := rapid.StringMatching(`[0-9]{0,10}`).Draw(t, "fraction")
		lit := zeros + whole + "." + fraction
		if zeros+whole == "" && fraction == "" {
			return
		}
		want := fmt.Sprintf("[decimal(%d,%d)]", max(len(whole)+len(fraction), 1), len(fraction))
		if got := fmt.Sprint(ItemTypes("select " + lit)); got != want {
			t.Fatalf("select %s: %s, want %s", lit, got, want)
		}
	})
}

func TestRowItemTypes(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"select row(1, 'a') r, row(true, null, 1.5, 3000000000)", "[row(integer, varchar(1)) row(boolean, unknown, decimal(2,1), bigint)]"},
		{`select cast(row(1, 'a') as row(X integer, "Y z" varchar(5))), cast(row(1) as row(d decimal(10, 2)))`, "[row(x integer, Y z varchar(5)) row(d decimal(10,2))]"},
		{"select row(a, 1) from t", "[]"},
		{"select cast(row(1, 2) as row(x integer))", "[]"},
	} {
		if got := fmt.Sprint(ItemTypes(c.sql)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}

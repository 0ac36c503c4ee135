package pgwire_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// PostgreSQL's array text ('{"a b",NULL,"c\"d"}') reaches DuckDB as a parameter (node-postgres
// sends arrays so, typed by the statement's cast) and as a literal cast to an array type; both
// must read as PostgreSQL reads them. The oracle is PostgreSQL itself, as in oracle_duckdb_test.go.
func TestPGArrayTextOnDuckDB(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	o := newOracle(t)
	m := pgtype.NewMap()
	elem := rapid.Ptr(rapid.StringOf(rapid.Rune().Filter(func(r rune) bool { return r != 0 })), true)
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOf(elem).Draw(t, "elements")
		text, err := m.Encode(pgtype.TextArrayOID, pgtype.TextFormatCode, vals, nil)
		if err != nil {
			t.Fatal(err)
		}
		arr := string(text)
		if spaced := rapid.Bool().Draw(t, "spaced"); spaced { // as a person writes it
			arr = strings.ReplaceAll(strings.ReplaceAll(arr, "{", "{ "), ",NULL", " , NULL ")
		}
		for _, sql := range []string{"SELECT $1::text[]", "SELECT cardinality($1::text[])", "SELECT 'x' = ANY($1::text[])"} {
			want := askText(o.pg, sql, arr)
			if got := askText(o.duck, sql, arr); got != want {
				t.Fatalf("%s with %q:\n  PostgreSQL: %s\n  QueryFlux on DuckDB: %s", sql, arr, want, got)
			}
		}
		lit := "SELECT '" + strings.ReplaceAll(arr, "'", "''") + "'::text[]"
		if want, got := askText(o.pg, lit, ""), askText(o.duck, lit, ""); got != want {
			t.Fatalf("%s:\n  PostgreSQL: %s\n  QueryFlux on DuckDB: %s", lit, want, got)
		}
	})
}

// Integer arrays, nested ones and the forms PostgreSQL refuses, by example.
func TestPGArrayTextOnDuckDBExamples(t *testing.T) {
	o := newOracle(t)
	for _, c := range []struct{ sql, arg string }{
		{"SELECT $1::int[]", "{1,2,3}"},
		{"SELECT $1::int4[]", `{"1", 2 ,NULL}`},
		{"SELECT 2 = ANY($1::int[])", "{1,2}"},
		{"SELECT $1::int[][]", "{{1,2},{3,4}}"},
		{"SELECT $1::bigint[]", "{}"},
		{"SELECT '{1,2}'::integer[]", ""},
		{"SELECT '{}'::text[]", ""},
		{"SELECT '{a,\"b c\",NULL}'::varchar[] AS v", ""},
		{"SELECT '{{a},{b}}'::text[][]", ""},
		{"SELECT '[1:2]={7,8}'::int[]", ""},
		{"SELECT '{\"a\":1}'::json", ""}, // not an array: untouched
	} {
		want := askText(o.pg, c.sql, c.arg)
		if got := askText(o.duck, c.sql, c.arg); got != want {
			t.Errorf("%s with %q:\n  PostgreSQL: %s\n  QueryFlux on DuckDB: %s", c.sql, c.arg, want, got)
		}
	}
	for _, bad := range []string{"{1,2", "{1,,2}", "1,2", "{1}x"} {
		if got := askText(o.duck, "SELECT $1::int[]", bad); !strings.Contains(got, "malformed array literal") {
			t.Errorf("%q: %s, want a malformed array literal error", bad, got)
		}
	}
}

// askText runs sql with arg as its one untyped text parameter ("" for none), as node-postgres
// sends it, and returns the first column of the first row in text, or the error's message.
func askText(c *pgconn.PgConn, sql, arg string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
	defer cancel()
	var params [][]byte
	if arg != "" {
		params = [][]byte{[]byte(arg)}
	}
	res := c.ExecParams(ctx, sql, params, nil, nil, nil).Read()
	switch {
	case res.Err != nil:
		return "error: " + res.Err.Error()
	case len(res.Rows) != 1 || len(res.Rows[0]) != 1:
		return "not one value"
	case res.Rows[0][0] == nil:
		return "NULL"
	}
	return string(res.Rows[0][0])
}

// pgx sends Go slices as binary arrays of the type the parameter's cast names. (A bare
// = ANY($1) leaves DuckDB without a type for $1: docs/duckdb.md.)
func TestPGArrayParamsFromPgxOnDuckDB(t *testing.T) {
	conn := connect(t, memoryDuckProxy(t, "arrays").URL())
	ctx := context.Background()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM (VALUES (1), (2), (3)) v(i) WHERE i = ANY($1::int[])", []int32{1, 3}).Scan(&n); err != nil || n != 2 {
		t.Fatalf("= ANY($1::int[]) of []int32{1, 3}: %d, %v; want 2", n, err)
	}
	var got []string
	want := []string{"a", "b c", `d"e\f`, ""}
	if err := conn.QueryRow(ctx, "SELECT $1::text[]", want).Scan(&got); err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("$1::text[] of %q: %q, %v", want, got, err)
	}
}

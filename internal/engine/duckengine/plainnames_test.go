package duckengine

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
)

var protocols = []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino}

// duckConn is a connection to a new in-memory DuckDB database, and DuckDB's keywords.
func duckConn(t *testing.T) (conn *sql.Conn, keywords []string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err = db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rows, err := conn.QueryContext(context.Background(), "SELECT keyword_name FROM duckdb_keywords()")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keywords = append(keywords, k)
	}
	if reservedWords(context.Background(), conn) == nil {
		t.Fatal("DuckDB's keywords could not be read")
	}
	return conn, keywords
}

// failer is what the checks need of a *testing.T or a *rapid.T.
type failer interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// parsedNames is namesFor of DuckDB's parse of sqlText; parsed is false when DuckDB cannot parse
// it (no client could run it).
func parsedNames(t failer, conn *sql.Conn, protocol, sqlText string) (names []string, parsed bool) {
	t.Helper()
	var doc string
	if err := conn.QueryRowContext(context.Background(), "SELECT CAST(json_serialize_sql(CAST(? AS VARCHAR)) AS VARCHAR)", sqlText).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	return namesFor(protocol, sqlText, doc), !strings.Contains(doc, `"error":true`)
}

// agree fails t when plainNames answers for sqlText otherwise than the parse; it reports whether
// plainNames answered.
func agree(t failer, conn *sql.Conn, sqlText string) (answered bool) {
	t.Helper()
	for _, p := range protocols {
		plain, ok := plainNames(p, sqlText, reserved.words)
		if !ok {
			continue
		}
		answered = true
		parsed, parsable := parsedNames(t, conn, p, sqlText)
		if parsable && (strings.Join(plain, "|") != strings.Join(parsed, "|") || (plain == nil) != (parsed == nil)) {
			t.Fatalf("%s, %s: names %q read off the text, %q from the parse", p, sqlText, plain, parsed)
		}
	}
	return answered
}

// Statements whose items are all columns, aliased or stars are named off their text; a statement
// with any other item, or another kind of statement, is left to the parse.
func TestPlainNamesAnswerOnlyForColumnsAliasesAndStars(t *testing.T) {
	conn, _ := duckConn(t)
	const none = "(no answer)"
	for _, c := range []struct{ sql, want string }{
		{"select x from t", "x"},
		{"SELECT Col_1, t.y, s.t.z FROM t", "Col_1|y|z"},
		{`select "a b", "say ""hi""" from t`, `a b|say "hi"`},
		{"select distinct x + 1 as y, count(*) AS n, (select 1) as \"Sub\" from t", "y|n|Sub"},
		{"select *, t.*, x from t", ""}, // two stars: DuckDB's own names (nil)
		{"select *, x from t", "*|x"},
		{"with w as (select 1 as k) select k, k as j from w", "k|j"},
		{"select x from t union all select 1", "x"},
		{"select x, 1 from t", none},
		{"select true", none},
		{"select null", none},
		{"select current_date", "current_date"}, // a column to DuckDB's parser (its binder finds the function): to namesFor too
		{"select x::int from t", none},
		{"select x y from t", none},
		{"select distinct on (x) x from t", none},
		{"from t select x", none},
		{"values (1)", none},
		{"(select x from t)", none},
	} {
		names, ok := plainNames(query.ProtocolPostgres, c.sql, reserved.words)
		got := strings.Join(names, "|")
		if !ok {
			got = none
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.sql, got, c.want)
		}
		agree(t, conn, c.sql)
	}
}

// Every DuckDB keyword as a select item alone, qualified and as an alias: where plainNames
// answers, the parse says the same (an item such as true or current_date is an expression).
func TestPlainNamesOfKeywordsAgreeWithTheParse(t *testing.T) {
	conn, keywords := duckConn(t)
	answered := 0
	for _, k := range keywords {
		for _, stmt := range []string{"select " + k, "select t." + k + " from t", "select 1 as " + k, "select " + strings.ToUpper(k)} {
			if agree(t, conn, stmt) {
				answered++
			}
		}
	}
	if answered == 0 {
		t.Fatal("no keyword statement was named off its text")
	}
}

// Any select list of columns, stars, aliased and bare expressions, with or without DISTINCT, a
// WITH, a FROM and a set operation: where plainNames answers, it answers as the parse does.
func TestPlainNamesAgreeWithTheParse(t *testing.T) {
	conn, keywords := duckConn(t)
	ident := rapid.OneOf(
		rapid.SampledFrom([]string{"x", "X", "Col_1", "y2", "_z", "naïve"}),
		rapid.SampledFrom(keywords),
		rapid.SampledFrom([]string{`"a b"`, `"Q""uote"`, `"select"`, `"X"`, `"*"`}),
	)
	expr := rapid.SampledFrom([]string{"1", "x + 1", "count(*)", "lower(x)", "cast(x as int)", "x::int", "true", "null",
		"(select 1 as q)", "'s'", "-x", "x[1]", "exists(select 1)", "case when x then 1 end", "coalesce(x, 1)", "$1"})
	item := rapid.Custom(func(t *rapid.T) string {
		switch rapid.IntRange(0, 5).Draw(t, "form") {
		case 0:
			return ident.Draw(t, "column")
		case 1:
			return ident.Draw(t, "table") + "." + ident.Draw(t, "column")
		case 2:
			return rapid.SampledFrom([]string{"*", "t.*"}).Draw(t, "star")
		case 3:
			return expr.Draw(t, "expr") + rapid.SampledFrom([]string{" as ", " AS ", " "}).Draw(t, "as") + ident.Draw(t, "alias")
		case 4:
			return ident.Draw(t, "column") + rapid.SampledFrom([]string{" as ", " "}).Draw(t, "as") + ident.Draw(t, "alias")
		}
		return expr.Draw(t, "expr")
	})
	answered := 0
	rapid.Check(t, func(t *rapid.T) {
		items := rapid.SliceOfN(item, 1, 4).Draw(t, "items")
		stmt := rapid.SampledFrom([]string{"", "with w as (select 1 as x) "}).Draw(t, "with") +
			"select " + rapid.SampledFrom([]string{"", "distinct ", "all "}).Draw(t, "modifier") +
			strings.Join(items, rapid.SampledFrom([]string{", ", ",", " ,\n"}).Draw(t, "comma")) +
			rapid.SampledFrom([]string{"", " from t", " from t where x > 1 order by 1", " union all select 1", ";"}).Draw(t, "rest")
		if agree(t, conn, stmt) {
			answered++
		}
	})
	if answered == 0 {
		t.Fatal("no drawn statement was named off its text")
	}
}

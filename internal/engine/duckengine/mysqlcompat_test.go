package duckengine_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// duckValue runs SELECT lit on the embedded DuckDB as a MySQL client's statement and returns
// the one value's bytes (a string's or a blob's).
func duckValue(t interface {
	Helper()
	Fatalf(string, ...any)
}, e query.Engine, stmt string) []byte {
	t.Helper()
	ctx := context.Background()
	rows, err := e.Execute(ctx, &query.Request{SQL: stmt, Protocol: query.ProtocolMySQL})
	if err != nil {
		t.Fatalf("DuckDB %q: %v", stmt, err)
	}
	defer rows.Close()
	b, err := rows.Next(ctx)
	if err != nil && err != io.EOF {
		t.Fatalf("DuckDB %q: %v", stmt, err)
	}
	if b == nil || b.NumRows() != 1 {
		t.Fatalf("DuckDB %q: no row", stmt)
	}
	switch c := b.Column(0).(type) {
	case *array.String:
		return []byte(c.Value(0))
	case *array.Binary:
		return c.Value(0)
	default:
		t.Fatalf("DuckDB %q: a %s column", stmt, c.DataType())
	}
	return nil
}

// TestMySQLStringLiteralsAsMariaDBReadsThem: a MySQL client's string literal, as the clients
// that interpolate parameters write it ('O\'Brien', 'C:\\temp', 'a\nb', _binary'...'), and its
// `backquoted` names mean on the embedded DuckDB what they mean on MariaDB (the oracle): the same
// bytes come back. Before, DuckDB read a backslash as an ordinary character ('O\'Brien' was a
// syntax error, 'C:\\temp' came back with two backslashes) and refused backquotes.
func TestMySQLStringLiteralsAsMariaDBReadsThem(t *testing.T) {
	dsn, _ := mytest.NewDatabase(t)
	my, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	e := open(t)
	same := func(t interface {
		Helper()
		Fatalf(string, ...any)
	}, lit string) {
		t.Helper()
		stmt := "SELECT " + lit + " AS v"
		var want []byte
		if err := my.QueryRow(stmt).Scan(&want); err != nil {
			t.Fatalf("MariaDB %q: %v", stmt, err)
		}
		if got := duckValue(t, e, stmt); string(got) != string(want) {
			t.Fatalf("%q: DuckDB %q, MariaDB %q", stmt, got, want)
		}
	}
	for _, v := range []string{"O'Brien", `C:\temp\new`, "a\nb\tc\rd", "nul\x00in\x00side", `100% \% \_`, `\`,
		"ü€𝄞😀日本語", `say "hi"`, "ctrl-z \x1a", "", `\'`} {
		same(t, mytest.Quote(v))
		same(t, "_binary"+mytest.Quote(v))
	}
	// Literals no client writes but a person may: unknown escapes, doubled quotes, both.
	for _, lit := range []string{`'a\qb\Q'`, `'it''s'`, `'it\'s ''both'''`, `'\\\\'`, `'tab\	end'`, `_BINARY'\0\1'`,
		// Backquoted names, as ORMs and mysql2's escapeId write them.
		"(SELECT `a``b` FROM (SELECT 'x\\'y' AS `a``b`) AS `t`)", "(SELECT `select` FROM (SELECT 'z' AS `select`) `from`)",
		// MySQL's # comments and LIMIT offset, count.
		"'a' # a comment, with 'quotes'\n", "'#' #\n",
		"(SELECT x FROM (SELECT 'a' AS x UNION ALL SELECT 'b' UNION ALL SELECT 'c') t ORDER BY x LIMIT 1, 1)",
		"(SELECT x FROM (SELECT 'a' AS x UNION ALL SELECT 'b' UNION ALL SELECT 'c') t ORDER BY x LIMIT 2 /* c */ ,\n 5)",
		"(SELECT x FROM (SELECT 'a' AS x UNION ALL SELECT 'b') t ORDER BY x LIMIT 1)",
		// Hexadecimal literals are bytes (mysql2 sends a Buffer as X'..'): DuckDB read X'4142' as
		// the text x4142, and 0x4142 as 0 named x4142.
		"X'4142'", "x'00ff'", "x''", "0x4142", "0x141",
		// Double-quoted strings (MySQL's default sql_mode): DuckDB read "abc" as a column name.
		`"abc"`, `"say ""hi"""`, `"it's"`, `"a\"b"`, `"tab\tx\\y"`, `"mixed '' and """`, `''`, `""`,
		// MySQL's one-row table: DuckDB has no DUAL.
		"(SELECT 'd' FROM DUAL)", "(SELECT 'e' FROM /* c */ dual WHERE 1 = 1)", "(SELECT 'f' from Dual LIMIT 1)"} {
		same(t, lit)
	}
	for _, v := range []string{"O'Brien", `C:\temp`, "a\nb", `say "hi"`, "ü€𝄞😀"} {
		same(t, `"`+strings.NewReplacer(`\`, `\\`, `"`, `""`).Replace(v)+`"`)
	}
	// Two literals and a comment in one statement: each is rewritten, the rest kept.
	stmt := `SELECT concat('a\'b', /* c\'d */ 'e\\f') AS v`
	if got := duckValue(t, e, stmt); string(got) != `a'be\f` {
		t.Fatalf("%s: %q", stmt, got)
	}
	rapid.Check(t, func(rt *rapid.T) {
		special := rapid.SampledFrom([]string{`\`, `'`, `"`, "\x00", "\n", "\r", "\x1a", "\t", "%", "_", "ü", "😀", "''", `\\`})
		var b strings.Builder
		for range rapid.IntRange(0, 8).Draw(rt, "parts") {
			if rapid.Bool().Draw(rt, "special") {
				b.WriteString(special.Draw(rt, "s"))
			} else {
				b.WriteString(rapid.String().Draw(rt, "text"))
			}
		}
		v := b.String()
		same(rt, mytest.Quote(v))
		raw := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "bytes")
		same(rt, "_binary"+mytest.Quote(string(raw)))
		same(rt, fmt.Sprintf("X'%x'", raw))
	})
}

// TestMySQLNoArgFunctionsOnDuckDB: DATABASE(), SCHEMA(), CURDATE() and CURTIME() from a MySQL
// client answer what DuckDB's own names for them do (before: "Catalog Error: Scalar Function
// with name database does not exist"); a string or a name that only looks like one is left.
func TestMySQLNoArgFunctionsOnDuckDB(t *testing.T) {
	e := open(t)
	for _, c := range []struct{ mysql, duck string }{
		{"SELECT DATABASE() AS v", "SELECT current_database() AS v"},
		{"SELECT schema ( /* c */ ) AS v", "SELECT current_database() AS v"},
		{"SELECT CAST(CURDATE() AS VARCHAR) AS v", "SELECT CAST(current_date AS VARCHAR) AS v"},
		{"SELECT CAST(curtime() < TIME '23:59:59.999999' AS VARCHAR) AS v", "SELECT 'true' AS v"},
		{"SELECT 'DATABASE()' AS v", "SELECT 'DATABASE()' AS v"},
		{`SELECT "curdate()" AS v`, "SELECT 'curdate()' AS v"},
		{"SELECT `database` AS v FROM (SELECT 'col' AS `database`) t", "SELECT 'col' AS v"},
	} {
		got, want := duckValue(t, e, c.mysql), duckValue(t, e, c.duck)
		if string(got) != string(want) {
			t.Errorf("%s: %q, want %q", c.mysql, got, want)
		}
	}
}

// A PostgreSQL client's literal is not rewritten: 'a\nb' is four characters there.
func TestPostgresLiteralsKeepTheirBackslashes(t *testing.T) {
	e := open(t)
	rows, err := e.Execute(context.Background(), &query.Request{SQL: `SELECT 'a\nb' AS v`, Protocol: query.ProtocolPostgres})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Column(0).(*array.String).Value(0); got != `a\nb` {
		t.Fatalf("%q, want %q", got, `a\nb`)
	}
}

// TestColumnNamedAtOnDuckDB: a column called at (a name to MySQL and PostgreSQL; to DuckDB a
// keyword of AT TIME ZONE and time travel) is created, written and read from either wire, and
// AT TIME ZONE still converts.
func TestColumnNamedAtOnDuckDB(t *testing.T) {
	e := open(t)
	for _, p := range []string{query.ProtocolMySQL, query.ProtocolPostgres} {
		table := "at_" + p
		for _, stmt := range []string{
			"CREATE TABLE " + table + " (id int, at timestamp, At_x int)",
			"INSERT INTO " + table + " (id, at) VALUES (1, TIMESTAMP '2020-01-02 03:04:05')",
		} {
			if _, _, err := enginetest.TextRows(e, &query.Request{SQL: stmt, Protocol: p}); err != nil {
				t.Fatalf("%s: %s: %v", p, stmt, err)
			}
		}
		_, rows, err := enginetest.TextRows(e, &query.Request{Protocol: p,
			SQL: "SELECT CAST(at AS VARCHAR), CAST(TIMESTAMPTZ '2020-01-02 03:04:05+00' AT TIME ZONE 'Asia/Tokyo' AS VARCHAR) FROM " + table + " WHERE at IS NOT NULL"})
		if err != nil || len(rows) != 1 || rows[0][0] != "2020-01-02 03:04:05" || rows[0][1] != "2020-01-02 12:04:05" {
			t.Fatalf("%s: rows %q, %v; want the stored timestamp and Tokyo's 12:04:05", p, rows, err)
		}
	}
}

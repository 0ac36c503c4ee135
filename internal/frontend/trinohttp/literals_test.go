package trinohttp

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// A select item that is a literal has Trino's type on every engine, through both clients:
// 'x' varchar(1) (the engines' text is unbounded), time '01:02:03.456' time(3) (PostgreSQL's
// and DuckDB's keep microseconds), a bare NULL unknown (PostgreSQL's text, DuckDB's integer),
// 0.5 decimal(1,1) (PostgreSQL's unbounded numeric; DuckDB's decimal(2,1)), 1e0 a double
// (PostgreSQL's numeric), and uuid, json and interval literals (MariaDB has none of them: a
// syntax error).
func TestLiteralTypesOnEveryEngine(t *testing.T) {
	const sel = `select time '01:02:03.456' a, time '01:02:03' b, 'x' c, 'it''s' d, null e, '' f, 1.5 g, 0.5 h, 1e0 / 4 k, -1.50 l, ` +
		`uuid '6ccd780c-baba-1026-9564-5b8c656024db' u, interval '2' day i, interval '1-2' year to month y, interval '90' minute m`
	const wantTypes = "[time(3) time(0) varchar(1) varchar(4) unknown varchar(0) decimal(2,1) decimal(1,1) double decimal(3,2) " +
		"uuid interval day to second interval year to month interval day to second]"
	const wantRows = "[[01:02:03.456 01:02:03 x it's <nil>  1.5 0.5 0.25 -1.50 6ccd780c-baba-1026-9564-5b8c656024db " +
		"2 00:00:00.000 1-2 0 01:30:00.000]]"
	for _, c := range enginesNamed("postgres", "duckdb", "mariadb") {
		t.Run(c.name, func(t *testing.T) {
			backend, catalog, schema := c.backend(t)
			ts := startServer(t, backend, Options{})
			got := runNPMIn(t, ts.addr, "alice", catalog, schema, npmStep{Name: "sel", SQL: sel},
				npmStep{Name: "json", SQL: `select json '{"a":1}' j, 'a' || 'b' v`})
			o := got["sel"].OK
			if o == nil {
				t.Fatalf("npm: %+v", got["sel"].Error)
			}
			if fmt.Sprint(o.Types) != wantTypes || fmt.Sprint(o.Rows) != wantRows {
				t.Errorf("npm:\n %v\n %v\nwant\n %s\n %s", o.Types, o.Rows, wantTypes, wantRows)
			}
			if j := got["json"].OK; j == nil || fmt.Sprint(j.Types) != "[json varchar]" || fmt.Sprint(j.Rows) != `[[{"a":1} ab]]` {
				t.Errorf("npm json: %+v %+v", j, got["json"].Error)
			}
			db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: catalog, Schema: schema})
			r, err := db.Query(sel)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cts, err := r.ColumnTypes()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ct := range cts {
				name := ct.DatabaseTypeName()
				if n, ok := ct.Length(); ok && n < 1<<31-1 {
					name += fmt.Sprintf("(%d)", n)
				}
				if p, s, ok := ct.DecimalSize(); ok {
					name += fmt.Sprintf("(%d,%d)", p, s)
				}
				names = append(names, name)
			}
			const wantNames = "TIME(3,0) TIME(0,0) VARCHAR(1) VARCHAR(4) UNKNOWN VARCHAR(0) DECIMAL(2,1) DECIMAL(1,1) DOUBLE DECIMAL(3,2) " +
				"UUID INTERVAL DAY TO SECOND INTERVAL YEAR TO MONTH INTERVAL DAY TO SECOND"
			if got := strings.Join(names, " "); got != wantNames {
				t.Errorf("go client types:\n %s\nwant\n %s", got, wantNames)
			}
			var a, b any
			var s1, s2, s3, g, h, l, u, i, y, m string
			var e sql.NullString
			var k float64
			if !r.Next() {
				t.Fatal(r.Err())
			}
			if err := r.Scan(&a, &b, &s1, &s2, &e, &s3, &g, &h, &k, &l, &u, &i, &y, &m); err != nil {
				t.Fatal(err)
			}
			if row := strings.Join([]string{fmt.Sprint(a, b), s1, s2, fmt.Sprint(e.Valid), s3, g, h, fmt.Sprint(k), l, u, i, y, m}, "|"); row !=
				"0000-01-01 01:02:03.456 +0000 UTC 0000-01-01 01:02:03 +0000 UTC|x|it's|false||1.5|0.5|0.25|-1.50|6ccd780c-baba-1026-9564-5b8c656024db|2 00:00:00.000|1-2|0 01:30:00.000" {
				t.Errorf("go client row: %s", row)
			}
		})
	}
}

// trinoEngine is an engine a Trino client's statements run on, and the catalog and schema the
// client names there ("" for none).
type trinoEngine struct {
	name    string
	backend func(t *testing.T) (query.Backend, string, string)
}

// enginesNamed are the engines named, of postgres, duckdb and mariadb.
func enginesNamed(names ...string) []trinoEngine {
	all := map[string]func(t *testing.T) (query.Backend, string, string){
		"postgres": func(t *testing.T) (query.Backend, string, string) { return postgresBackend(t), "", "" },
		"duckdb":   func(t *testing.T) (query.Backend, string, string) { return duckBackend(t), "", "" },
		"mariadb": func(t *testing.T) (query.Backend, string, string) {
			eng, _, dbName := frontendtest.MariaDB(t)
			return frontendtest.NewBackend(eng), "maria", dbName
		},
	}
	var out []trinoEngine
	for _, n := range names {
		out = append(out, trinoEngine{n, all[n]})
	}
	return out
}

// Trino's row(...) on PostgreSQL (a record's text "(1,a)" there; a cast to a row type a syntax
// error) is the row type its fields declare and the JSON array of its fields, through both
// clients.
func TestRowsOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	const sel = `select row(1, 'a') r, cast(row(2, 'b') as row(x integer, y varchar)) s, row(1.50, true) d`
	got := runNPMIn(t, ts.addr, "alice", "", "", npmStep{Name: "sel", SQL: sel})
	o := got["sel"].OK
	if o == nil {
		t.Fatalf("npm: %+v", got["sel"].Error)
	}
	const wantTypes = "[row(integer, varchar(1)) row(x integer, y varchar) row(decimal(3,2), boolean)]"
	if fmt.Sprint(o.Types) != wantTypes || fmt.Sprint(o.Rows) != "[[[1 a] [2 b] [1.50 true]]]" {
		t.Errorf("npm: %v %v\n want %s", o.Types, o.Rows, wantTypes)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var r, s, d any
	if err := db.QueryRow(sel).Scan(&r, &s, &d); err != nil {
		t.Fatal(err)
	}
	const want = "{names:[field0 field1] values:[1 a] Valid:true}|{names:[x y] values:[2 b] Valid:true}|{names:[field0 field1] values:[1.50 true] Valid:true}"
	if got := fmt.Sprintf("%+v|%+v|%+v", r, s, d); got != want {
		t.Errorf("go client: %s\nwant %s", got, want)
	}
	// Rows compared, as Trino compares them: field by field.
	var n int
	const compared = `select count(*) from (values (1, 'a'), (2, 'b'), (2, 'c')) t(x, y)
		where row(x, y) = row(1, 'a') or row(x, y) in (row(2, 'c')) or row(x, y) < row(0, 'z')`
	if err := db.QueryRow(compared).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows compared in WHERE: %d, %v; want 2", n, err)
	}
}

// TestStatementBytesAreClassedAsUnicodeClassesThem: the parser's byte classes are unicode's
// of each byte taken as a rune, for all 256 (a statement's words end where they did).
func TestStatementBytesAreClassedAsUnicodeClassesThem(t *testing.T) {
	for b := range 256 {
		r := rune(b)
		c := byteClass[b]
		if got, want := c&byteSpace != 0, unicode.IsSpace(r); got != want {
			t.Errorf("byte %#x: space %v, unicode.IsSpace %v", b, got, want)
		}
		if got, want := c&byteWord != 0, unicode.IsLetter(r) || r == '_'; got != want {
			t.Errorf("byte %#x: in a word %v, want %v", b, got, want)
		}
		if got, want := c&byteIdent != 0, unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'; got != want {
			t.Errorf("byte %#x: in an identifier %v, want %v", b, got, want)
		}
	}
}

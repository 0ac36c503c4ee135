package trinohttp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"
)

// Trino's row(...) on the embedded DuckDB (go-duckdb cannot read DuckDB's struct of unnamed
// fields: the statement failed "empty name") and MariaDB (a row is a comparison's operand only:
// 1241 "Operand should contain 1 column(s)") is what Trino answers: an anonymous row type,
// row(integer, varchar(1)), whose signature names no field (the go client calls them field0,
// field1), its value the JSON array of its fields; a cast to a row type names them; rows still
// compare field by field.
func TestRowsOnDuckDBAndMariaDB(t *testing.T) {
	for _, c := range enginesNamed("duckdb", "mariadb") {
		t.Run(c.name, func(t *testing.T) {
			backend, catalog, schema := c.backend(t)
			ts := startServer(t, backend, Options{})
			const sel = `select row(1, 'a') r, cast(row(2, 'b') as row(x integer, y varchar)) s, row(1.50, true) d`
			got := runNPMIn(t, ts.addr, "alice", catalog, schema, npmStep{Name: "sel", SQL: sel})
			o := got["sel"].OK
			if o == nil {
				t.Fatalf("npm: %+v", got["sel"].Error)
			}
			const wantTypes = "[row(integer, varchar(1)) row(x integer, y varchar) row(decimal(3,2), boolean)]"
			if fmt.Sprint(o.Types) != wantTypes || fmt.Sprint(o.Rows) != "[[[1 a] [2 b] [1.50 true]]]" {
				t.Errorf("npm: %v %v\n want %s", o.Types, o.Rows, wantTypes)
			}
			db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: catalog, Schema: schema})
			var r, s, d any
			if err := db.QueryRow(sel).Scan(&r, &s, &d); err != nil {
				t.Fatal(err)
			}
			const want = "{names:[field0 field1] values:[1 a] Valid:true}|{names:[x y] values:[2 b] Valid:true}|{names:[field0 field1] values:[1.50 true] Valid:true}"
			if got := fmt.Sprintf("%+v|%+v|%+v", r, s, d); got != want {
				t.Errorf("go client: %s\nwant %s", got, want)
			}
			var n int
			const compared = `select count(*) from (select 1 x, 'a' y union all select 2, 'b' union all select 2, 'c') t
				where row(x, y) = row(1, 'a') or row(x, y) in (row(2, 'c')) or row(x, y) < row(0, 'z')`
			if err := db.QueryRow(compared).Scan(&n); err != nil || n != 2 {
				t.Errorf("rows compared in WHERE: %d, %v; want 2", n, err)
			}
			if c.name != "duckdb" {
				return
			}
			// rows of columns, nested, in an array; a field by position
			const more = `select row(x, y) c, array[row(1, 'a'), row(2, 'bc')] a, row(1, row(2, 'x')) n, row(7, 8)[2] p
				from (select 1 x, 'a' y) t`
			names, sigs := columnTypes(t, ts.addr, more)
			const wantMore = "row(integer, varchar)|array(row(integer, varchar))|row(integer, row(integer, varchar(1)))|integer"
			if strings.Join(names, "|") != wantMore || strings.Contains(sigs[0], "fieldName") || strings.Contains(sigs[1], "fieldName") {
				t.Errorf("types %q, signatures %s\nwant %s, no fieldName", names, sigs, wantMore)
			}
			var cr, ar, nr any
			var p int
			if err := db.QueryRow(more).Scan(&cr, &ar, &nr, &p); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%v|%v|%v|%d", cr, ar, nr, p); got != "{[field0 field1] [1 a] true}|[{[field0 field1] [1 a] true} {[field0 field1] [2 bc] true}]|{[field0 field1] [1 {[field0 field1] [2 x] true}] true}|8" {
				t.Errorf("go client: %s", got)
			}
		})
	}
}

// Trino's zoned timestamps on the embedded DuckDB, as on PostgreSQL (zonedTimestamps): a
// literal that names its zone was INVALID_CAST_ARGUMENT ("has a timestamp that is not UTC"),
// one in UTC a timestamp(6) without its zone, and x AT TIME ZONE 'zone' read x as the zone's
// local time (08:04:05 UTC for New York's 03:04:05); a zone DuckDB does not know fails naming
// it.
func TestZonedTimestampsOnDuckDB(t *testing.T) {
	zonedTimestamps(t, duckBackend(t))
	ts := startServer(t, duckBackend(t), Options{})
	_, qr := post(t, ts.addr, `select timestamp '2024-01-02 03:04:05 Mars/Olympus'`)
	if _, last := readAll(t, qr); last.Error == nil || !strings.Contains(last.Error.Message, "Mars/Olympus") {
		t.Errorf("an unknown zone: %+v", last.Error)
	}
}

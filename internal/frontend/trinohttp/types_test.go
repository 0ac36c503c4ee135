package trinohttp

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

func duckBackend(t testing.TB) *frontendtest.Backend {
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return frontendtest.NewBackend(eng)
}

// columnTypes posts sql and returns each column's Trino type name and raw type signature.
func columnTypes(t *testing.T, addr, sql string) (names []string, sigs []string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader(sql))
	req.Header.Set("X-Trino-User", "carol")
	_, qr := do(t, req)
	cols := qr.Columns
	for qr.NextURI != "" && cols == nil {
		_, qr = get(t, qr.NextURI)
		if qr.Error != nil {
			t.Fatalf("%s: %s", sql, qr.Error.Message)
		}
		cols = qr.Columns
	}
	for _, c := range cols {
		b, _ := json.Marshal(c.TypeSignature)
		names, sigs = append(names, c.Type), append(sigs, string(b))
	}
	return names, sigs
}

type point struct {
	K int64  `trino:"k"`
	V string `trino:"v w"`
}

// DuckDB's lists, structs, maps, fixed-size arrays, intervals, uuids and decimals reach
// trino-go-client as Trino's array, row, map, interval day to second, uuid and decimal, and scan
// into the driver's own types (NullSlice, NullRow, NullMap, Interval).
func TestTrinoNestedTypesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const q = `select [1, 2, NULL] a, {'k': 7, 'v w': 'it''s'} b, map {'x': [1.5::decimal(4,1)], 'y': []} c,
		interval '1 month 2 days 3.25 seconds' d, '6ccd780c-baba-1026-9564-5b8c656024db'::uuid e,
		['6ccd780c-baba-1026-9564-5b8c656024db'::uuid] f, [[1], [2, 3]] g, [timestamptz '2024-02-29 13:14:15.5+00'] h,
		[1, 2]::integer[2] i, ['a, b', NULL, 'NULL', '[x]'] j, 12.50::decimal(9,2) k, '{"a": [1]}'::json l`
	names, sigs := columnTypes(t, ts.addr, q)
	want := []string{"array(integer)", "row(k integer, v w varchar)", "map(varchar, array(decimal(4,1)))",
		"interval day to second", "uuid", "array(uuid)", "array(array(integer))", "array(timestamp(6) with time zone)",
		"array(integer)", "array(varchar)", "decimal(9,2)", "json"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Fatalf("types\n got %q\nwant %q", names, want)
	}
	if !strings.HasPrefix(sigs[1], `{"rawType":"row","arguments":[{"kind":"NAMED_TYPE","value":{"fieldName":{"name":"k"},`) ||
		!strings.Contains(sigs[1], `{"kind":"NAMED_TYPE","value":{"fieldName":{"name":"v w"},"typeSignature":{"arguments":[{"kind":"LONG","value":2147483647}],"rawType":"varchar"}}}`) {
		t.Fatalf("row signature %s", sigs[1])
	}

	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var (
		a    trino.NullSlice[sql.NullInt64]
		b    trino.NullRow[point]
		c    trino.NullMap[string, trino.NullSlice[string]]
		d    trino.Interval
		e    string
		f    trino.NullSlice[string]
		g    trino.NullSlice[trino.NullSlice[int64]]
		h    trino.NullSlice[time.Time]
		i    trino.NullSlice[int64]
		j    trino.NullSlice[sql.NullString]
		k, l string
	)
	if err := db.QueryRow(q).Scan(&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &k, &l); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"list with NULL", len(a.Slice) == 3 && a.Slice[0].Int64 == 1 && a.Slice[1].Int64 == 2 && !a.Slice[2].Valid, true},
		{"struct", b, trino.NullRow[point]{Row: point{K: 7, V: "it's"}, Valid: true}},
		{"map", len(c.Map) == 2 && len(c.Map["x"].Slice) == 1 && c.Map["x"].Slice[0] == "1.5" && c.Map["y"].Valid && len(c.Map["y"].Slice) == 0, true},
		{"interval (a month is 30 days)", d, trino.Interval{Duration: 32*24*time.Hour + 3250*time.Millisecond, Valid: true}},
		{"uuid", e, "6ccd780c-baba-1026-9564-5b8c656024db"},
		{"uuid list", strings.Join(f.Slice, ","), "6ccd780c-baba-1026-9564-5b8c656024db"},
		{"nested list", len(g.Slice) == 2 && len(g.Slice[1].Slice) == 2 && g.Slice[1].Slice[1] == 3, true},
		{"timestamptz list", len(h.Slice) == 1 && h.Slice[0].Equal(time.Date(2024, 2, 29, 13, 14, 15, 5e8, time.UTC)), true},
		{"fixed-size array", len(i.Slice) == 2 && i.Slice[1] == 2, true},
		{"strings that look like syntax", len(j.Slice) == 4 && j.Slice[0].String == "a, b" && !j.Slice[1].Valid && j.Slice[2].String == "NULL" && j.Slice[3].String == "[x]", true},
		{"decimal", k, "12.50"},
		{"json", l, `{"a": [1]}`}, // DuckDB's JSON text as written, as PostgreSQL's json
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %+v want %+v", c.what, c.got, c.want)
		}
	}
}

// PostgreSQL's arrays (of numbers, text, uuids, json, timestamps, bytea), uuid, json and
// intervals reach trino-go-client as Trino's array, uuid, json and interval types.
func TestTrinoTypesOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	const q = `select array[1, null, 3]::int4[] a, array['a,b', 'say "hi"', 'back\slash', null, 'NULL']::text[] b,
		'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid c, array['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid] d,
		'{"a": 1}'::jsonb e, array['{"b": [2]}'::json] f, interval '1 day 02:03:04.5' g, interval '-1 year -2 months' year to month h,
		array[1.25, null]::numeric(6,2)[] i, array[timestamptz '2024-02-29 13:14:15.5+02'] j, array[true, false] k,
		array['\xdead'::bytea] l, '{}'::int8[] m, array[interval '3 days -00:00:01'] n`
	names, _ := columnTypes(t, ts.addr, q)
	want := []string{"array(integer)", "array(varchar)", "uuid", "array(uuid)", "json", "array(json)",
		"interval day to second", "interval year to month", "array(decimal(6,2))", "array(timestamp(6) with time zone)",
		"array(boolean)", "array(varbinary)", "array(bigint)", "array(interval day to second)"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Fatalf("types\n got %q\nwant %q", names, want)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var (
		a    trino.NullSlice[sql.NullInt64]
		b    trino.NullSlice[sql.NullString]
		c    string
		d, f trino.NullSlice[string]
		e    string
		g, h trino.Interval
		i    trino.NullSlice[sql.NullString]
		j    trino.NullSlice[time.Time]
		k    trino.NullSlice[bool]
		l    trino.NullSlice[[]byte]
		m    trino.NullSlice[int64]
		n    trino.NullSlice[trino.Interval]
	)
	if err := db.QueryRow(q).Scan(&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &k, &l, &m, &n); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"int array", len(a.Slice) == 3 && a.Slice[0].Int64 == 1 && !a.Slice[1].Valid && a.Slice[2].Int64 == 3, true},
		{"text array", len(b.Slice) == 5 && b.Slice[0].String == "a,b" && b.Slice[1].String == `say "hi"` &&
			b.Slice[2].String == `back\slash` && !b.Slice[3].Valid && b.Slice[4].String == "NULL", true},
		{"uuid", c, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"uuid array", strings.Join(d.Slice, ","), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"jsonb", e, `{"a": 1}`},
		{"json array", strings.Join(f.Slice, ","), `{"b": [2]}`},
		{"interval", g, trino.Interval{Duration: 26*time.Hour + 3*time.Minute + 4500*time.Millisecond, Valid: true}},
		{"interval year to month", h, trino.Interval{Months: -14, Valid: true}},
		{"numeric array", len(i.Slice) == 2 && i.Slice[0].String == "1.25" && !i.Slice[1].Valid, true},
		{"timestamptz array", len(j.Slice) == 1 && j.Slice[0].Equal(time.Date(2024, 2, 29, 11, 14, 15, 5e8, time.UTC)), true},
		{"bool array", len(k.Slice) == 2 && k.Slice[0] && !k.Slice[1], true},
		{"bytea array", len(l.Slice) == 1 && string(l.Slice[0]) == "\xde\xad", true},
		{"empty array", m.Valid && len(m.Slice) == 0, true},
		{"interval array", len(n.Slice) == 1 && n.Slice[0].Duration == 3*24*time.Hour-time.Second, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %+v want %+v", c.what, c.got, c.want)
		}
	}
	// A two-dimensional value has no type the column could declare: a clear error, not garbage.
	_, qerr, _ := runTrino(t, ts.addr, "select array[[1, 2], [3, 4]]", nil)
	if qerr == nil || !strings.Contains(qerr.Message, "multi-dimensional") {
		t.Fatalf("2-D array: %+v", qerr)
	}
}

// Times with a zone reach trino-go-client as Trino's time with time zone (the offset kept), and
// numbers no decimal(38) holds (DuckDB's UHUGEINT and BIGNUM, PostgreSQL's unbounded numeric,
// NaN included, and numeric(39..76, s)) as Trino's number, each value exact; a DuckDB UNION,
// which Trino has no type for, is its member's text.
func TestTrinoTimeTZAndWideNumbers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend func(testing.TB) *frontendtest.Backend
		sql     string
		types   []string
		values  []string
	}{
		{"duckdb", duckBackend, `select '12:34:56.5+02'::timetz a, ['01:02:03-05:30'::timetz] b,
			'340282366920938463463374607431768211455'::uhugeint c, '-123456789012345678901234567890123456789012'::varint d,
			union_value(s := 'x')::union(n integer, s varchar) e`,
			[]string{"time(6) with time zone", "array(time(6) with time zone)", "number", "number", "varchar"},
			[]string{"12:34:56.5 +0200", "[01:02:03 -0530]", "340282366920938463463374607431768211455", "-123456789012345678901234567890123456789012", "x"}},
		{"postgres", postgresBackend, `select '12:34:56.5+02'::timetz(1) a, array['01:02:03-05:30'::timetz] b,
			1234567890123456789012345678901234567890.5::numeric(41,1) c, 'NaN'::numeric d, 2::numeric / 3 e`,
			[]string{"time(1) with time zone", "array(time(6) with time zone)", "number", "number", "number"},
			[]string{"12:34:56.5 +0200", "[01:02:03 -0530]", "1234567890123456789012345678901234567890.5", "NaN", "0.66666666666666666667"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.backend(t), Options{})
			if names, _ := columnTypes(t, ts.addr, tc.sql); strings.Join(names, "|") != strings.Join(tc.types, "|") {
				t.Fatalf("types\n got %q\nwant %q", names, tc.types)
			}
			db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
			var (
				a    time.Time
				b    trino.NullSlice[time.Time]
				c, d string
				e    string
			)
			if err := db.QueryRow(tc.sql).Scan(&a, &b, &c, &d, &e); err != nil {
				t.Fatal(err)
			}
			clock := func(v time.Time) string { return v.Format("15:04:05.999999 -0700") }
			got := []string{clock(a), "[" + clock(b.Slice[0]) + "]", c, d, e}
			if strings.Join(got, "|") != strings.Join(tc.values, "|") {
				t.Fatalf("values\n got %q\nwant %q", got, tc.values)
			}
		})
	}
}

// Trino's varbinary literal X'0102' (its hex digits may be split by blanks) reaches DuckDB as
// the bytes it is: trino-go-client reads varbinary bytes, and a comparison of a BLOB with one
// holds (DuckDB read the text x0102 before).
func TestTrinoBinaryLiteralOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const q = `select x'0102' a, X'CA FE' b, (select count(*) from (values (x'00ff')) v(c) where c = X'00FF') n`
	names, _ := columnTypes(t, ts.addr, q)
	if want := "varbinary|varbinary|bigint"; strings.Join(names, "|") != want {
		t.Fatalf("types %q, want %s", names, want)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var a, b []byte
	var n int64
	if err := db.QueryRow(q).Scan(&a, &b, &n); err != nil {
		t.Fatal(err)
	}
	if string(a) != "\x01\x02" || string(b) != "\xca\xfe" || n != 1 {
		t.Errorf("got %x %x %d, want 0102 cafe 1", a, b, n)
	}
}

// trino-go-client's statements with Trino's arithmetic and the functions DuckDB names otherwise
// (duckengine's trinofunctions.go) answer as Trino's: 7/2 is 3, date_add keeps a date a date.
func TestTrinoDialectOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var div, neg int64
	var like bool
	var moved, shown string
	const q = `select 7/2, -7/2, regexp_like('abc', 'b'), cast(date_add('day', 1, date '2024-01-31') as varchar), replace('a-b-c', '-')`
	if err := db.QueryRow(q).Scan(&div, &neg, &like, &moved, &shown); err != nil {
		t.Fatal(err)
	}
	if div != 3 || neg != -3 || !like || moved != "2024-02-01" || shown != "abc" {
		t.Errorf("got %d %d %v %q %q, want 3 -3 true 2024-02-01 abc", div, neg, like, moved, shown)
	}
}

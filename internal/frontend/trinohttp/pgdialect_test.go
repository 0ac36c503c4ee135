package trinohttp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// Trino's dialect on a PostgreSQL engine (package trinopg): Trino's SHOW and DESCRIBE, its
// functions and its _colN names, through trino-go-client and the npm trino-client, as Trino
// answers them.

const pgDialectTable = `create table orders (id integer, name varchar(5), at timestamp(3), price decimal(10,2), ok boolean)`

// pgDialectFunctions calls Trino's functions PostgreSQL lacks; want is Trino's answer.
var pgDialectFunctions = []struct{ sql, want string }{
	{`date_add('day', 1, date '2024-01-31')`, "2024-02-01"},
	{`date_add('month', 1, timestamp '2024-01-31 10:00:00')`, "2024-02-29 10:00:00"},
	{`date_diff('day', date '2024-01-01', date '2024-03-01')`, "60"},
	{`date_diff('month', date '2024-01-15', date '2024-03-14')`, "1"},
	{`date_diff('second', timestamp '2024-01-01 00:00:00', timestamp '2024-01-01 00:01:30.5')`, "90"},
	{`try_cast('12' as integer)`, "12"},
	{`try_cast('x' as integer)`, "<nil>"},
	{`try_cast('1.5' as double)`, "1.5"},
	{`try_cast(12.5 as integer)`, "13"},
	{`try_cast(-12.5 as integer)`, "-13"},
	{`try_cast(2.5e0 as bigint)`, "3"},
	{`try_cast('12.5' as integer)`, "<nil>"},
	{`try_cast(3000000000.4 as integer)`, "<nil>"},
	{`try_cast(1e300 as bigint)`, "<nil>"},
	{`contains(array[1, 2, 3], 2)`, "true"},
	{`split('a,b,c', ',')`, "[a b c]"},
	{`cardinality(array[1, 2])`, "2"},
	{`element_at(array[1, 2, 3], -1)`, "3"},
	{`element_at(array[1, 2, 3], 5)`, "<nil>"},
	{`element_at(map(array['a', 'b'], array[1, 2]), 'b')`, "2"},
	{`cardinality(map(array['a'], array[1]))`, "1"},
	{`to_unixtime(from_unixtime(1700000000))`, "1.7e+09"},
	{`year(date '2024-05-06')`, "2024"},
}

func TestTrinoDialectOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	if _, err := db.Exec(pgDialectTable); err != nil {
		t.Fatal(err)
	}
	read := func(q string) (names []string, rows string) {
		t.Helper()
		r, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if names, err = r.Columns(); err != nil {
			t.Fatal(err)
		}
		return names, fmt.Sprint(scanAll(t, r))
	}
	for _, c := range []struct{ sql, names, rows string }{
		{"show tables", "Table", "[[orders]]"},
		{"show tables like 'ord%'", "Table", "[[orders]]"},
		{"show schemas like 'p%'", "Schema", "[[pg_catalog] [public]]"},
		{"describe orders", "Column Type Extra Comment",
			"[[id integer  ] [name varchar(5)  ] [at timestamp(3)  ] [price decimal(10,2)  ] [ok boolean  ]]"},
		{"show columns from public.orders like 'n%'", "Column Type Extra Comment", "[[name varchar(5)  ]]"},
		{"select 1, id, orders.name, id + 1, count(*) over () n, now() is null from orders", "_col0 id name _col3 n _col5", "[]"},
	} {
		names, rows := read(c.sql)
		if strings.Join(names, " ") != c.names || rows != c.rows {
			t.Errorf("%s: %v %s, want %s %s", c.sql, names, rows, c.names, c.rows)
		}
	}
	items := make([]string, len(pgDialectFunctions))
	for i, f := range pgDialectFunctions {
		items[i] = f.sql
	}
	q := "select " + strings.Join(items, ", ")
	r, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := r.Columns()
	rows := scanAll(t, r)
	if len(rows) != 1 {
		t.Fatalf("%s: %v", q, rows)
	}
	for i, f := range pgDialectFunctions {
		v := rows[0][i]
		if ts, ok := v.(interface{ Format(string) string }); ok {
			v = strings.TrimSuffix(ts.Format("2006-01-02 15:04:05"), " 00:00:00")
		}
		if got := fmt.Sprint(v); got != f.want || names[i] != fmt.Sprintf("_col%d", i) {
			t.Errorf("%s: %s %q, want %s _col%d", f.sql, names[i], got, f.want, i)
		}
	}
	o := runNPM(t, ts.addr, "alice", npmStep{Name: "tables", SQL: "show tables"}, npmStep{Name: "describe", SQL: "describe orders"},
		npmStep{Name: "functions", SQL: q})
	if got := o["tables"]; got.OK == nil || jsonText(t, got.OK.Names) != `["Table"]` || jsonText(t, got.OK.Rows) != `[["orders"]]` {
		t.Errorf("npm show tables: %+v %+v", got.OK, got.Error)
	}
	if got := o["describe"]; got.OK == nil || len(got.OK.Rows) != 5 || jsonText(t, got.OK.Rows[1]) != `["name","varchar(5)","",""]` {
		t.Errorf("npm describe: %+v %+v", got.OK, got.Error)
	}
	got := o["functions"]
	if got.OK == nil || len(got.OK.Rows) != 1 || got.OK.Names[0] != "_col0" || got.OK.Names[len(items)-1] != fmt.Sprintf("_col%d", len(items)-1) {
		t.Fatalf("npm functions: %+v %+v", got.OK, got.Error)
	}
	const npmRow = `["2024-02-01","2024-02-29 10:00:00",60,1,90,12,null,1.5,13,-13,3,null,null,null,true,["a","b","c"],2,3,null,2,1,1700000000,2024]`
	if jsonText(t, got.OK.Rows[0]) != npmRow {
		t.Errorf("npm functions' row %s, want %s", jsonText(t, got.OK.Rows[0]), npmRow)
	}
}

// trinoEngines are the engines a Trino client's statement is compared on.
var trinoEngines = []struct {
	name    string
	backend func(testing.TB) *frontendtest.Backend
}{{"duckdb", duckBackend}, {"postgres", postgresBackend}}

// Common failures carry Trino's error name, number and type on every engine (npm trino-client).
func TestTrinoErrorsOnEachEngine(t *testing.T) {
	cases := []struct {
		sql, name string
		code      int
	}{
		{"select 1 +", "SYNTAX_ERROR", 1},
		{"select * from no_such_table", "TABLE_NOT_FOUND", 46},
		{"select no_such_col from errs", "COLUMN_NOT_FOUND", 47},
		{"select a / 0 from errs", "DIVISION_BY_ZERO", 8},
		{"select no_such_fn(1)", "FUNCTION_NOT_FOUND", 6},
		{"select cast('x' as integer)", "INVALID_CAST_ARGUMENT", 9},
		{"select cast(300000 as smallint)", "NUMERIC_VALUE_OUT_OF_RANGE", 19},
		{"select (select a from (values (1), (2)) t(a))", "SUBQUERY_MULTIPLE_ROWS", 28},
		{"select true + 1", "OPERATOR_NOT_FOUND", 10},
	}
	for _, e := range trinoEngines {
		t.Run(e.name, func(t *testing.T) {
			ts := startServer(t, e.backend(t), Options{})
			steps := []npmStep{{Name: "ddl", SQL: "create table errs (a integer)"}, {Name: "row", SQL: "insert into errs values (1)"}}
			for i, c := range cases {
				steps = append(steps, npmStep{Name: fmt.Sprint(i), SQL: c.sql})
			}
			o := runNPM(t, ts.addr, "alice", steps...)
			for i, c := range cases {
				got := o[fmt.Sprint(i)].Error
				if got == nil || got.ErrorName != c.name || got.ErrorCode != c.code || got.ErrorType != "USER_ERROR" {
					t.Errorf("%s: %+v, want %s (%d, USER_ERROR)", c.sql, got, c.name, c.code)
				}
			}
		})
	}
}

// date_trunc and date_add keep their timestamp's precision, VALUES' columns are _colN and
// information_schema.columns has Trino's columns, on every engine (npm trino-client).
func TestTrinoTypesAndColumnsOnEachEngine(t *testing.T) {
	steps := []npmStep{
		{Name: "ddl", SQL: "create table cols (a integer, b varchar(5))"},
		{Name: "trunc", SQL: "select date_trunc('day', timestamp '2024-01-02 03:04:05'), date_trunc('hour', timestamp '2024-01-02 03:04:05.123')"},
		{Name: "add", SQL: "select date_add('month', 1, timestamp '2024-01-31 10:00:00'), date_add('day', 1, timestamp '2024-01-02 03:04:05.123')"},
		{Name: "values", SQL: "values (1, 'a'), (2, 'b')"},
		{Name: "columns", SQL: "select * from information_schema.columns where table_name = 'cols' order by ordinal_position"},
	}
	want := map[string]string{
		"trunc":   `[_col0 _col1] [timestamp(0) timestamp(3)] [[2024-01-02 00:00:00 2024-01-02 03:00:00.000]]`,
		"add":     `[_col0 _col1] [timestamp(0) timestamp(3)] [[2024-02-29 10:00:00 2024-01-03 03:04:05.123]]`,
		"values":  `[_col0 _col1] [integer varchar] [[1 a] [2 b]]`, /* Trino's is varchar(1) */
		"columns": `[table_catalog table_schema table_name column_name ordinal_position column_default is_nullable data_type] [varchar varchar varchar varchar bigint varchar varchar varchar]`,
	}
	for _, e := range trinoEngines {
		t.Run(e.name, func(t *testing.T) {
			ts := startServer(t, e.backend(t), Options{})
			o := runNPM(t, ts.addr, "alice", steps...)
			for _, s := range steps[1:] {
				got := o[s.Name]
				if got.OK == nil {
					t.Errorf("%s: %+v", s.SQL, got.Error)
					continue
				}
				text := fmt.Sprintf("%v %v %v", got.OK.Names, got.OK.Types, got.OK.Rows)
				if s.Name == "columns" {
					text = fmt.Sprintf("%v %v", got.OK.Names, got.OK.Types)
					if rows := fmt.Sprint(got.OK.Rows); !strings.Contains(rows, " cols a 1 <nil> YES integer] [") ||
						!strings.HasSuffix(rows, " cols b 2 <nil> YES varchar(5)]]") {
						t.Errorf("%s: rows %s", s.SQL, rows)
					}
				}
				if text != want[s.Name] {
					t.Errorf("%s:\n got %s\nwant %s", s.SQL, text, want[s.Name])
				}
			}
		})
	}
}

// Trino's information_schema.columns has hidden columns, comment and extra_info (its DESCRIBE's
// Comment and Extra): named, they are read on PostgreSQL (a column's comment, NULL where it
// has none); * still lists the eight others (TestTrinoTypesAndColumnsOnEachEngine).
func TestHiddenInformationSchemaColumnsOnPostgres(t *testing.T) {
	backend := postgresBackend(t)
	frontendtest.Exec(t, backend.Engine, "CREATE TABLE noted (a integer, b text)")
	frontendtest.Exec(t, backend.Engine, "COMMENT ON COLUMN noted.a IS 'the key'")
	ts := startServer(t, backend, Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query(`select column_name, comment, "extra_info" from information_schema.columns where table_name = 'noted' order by ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(scanAll(t, rows)); got != "[[a the key <nil>] [b <nil> <nil>]]" {
		t.Fatalf("comment and extra_info: %s", got)
	}
}

// X'0102ff' is Trino's varbinary literal: its bytes on PostgreSQL (which reads X'..' as a bit
// string), as trino-go-client reads a varbinary.
func TestBinaryLiteralOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	var b []byte
	if err := db.QueryRow("select x'0102ff'").Scan(&b); err != nil || string(b) != "\x01\x02\xff" {
		t.Fatalf("x'0102ff': %q, %v", b, err)
	}
}

// Trino's timestamp with time zone keeps its zone on PostgreSQL: a literal that names one is
// that zone's time, x AT TIME ZONE 'zone' is x's instant (a timestamp read in UTC, the
// session's zone) in that zone, both announced timestamp(p) with time zone and written with
// the zone, through both clients; hour() of one is the zone's hour.
func TestZonedTimestampsOnPostgres(t *testing.T) { zonedTimestamps(t, postgresBackend(t)) }

// zonedTimestamps checks Trino's zoned timestamps through both clients on backend.
func zonedTimestamps(t *testing.T, backend query.Backend) {
	ts := startServer(t, backend, Options{})
	const sel = `select timestamp '2024-01-02 03:04:05.123 America/New_York' a, timestamp '2024-01-02 03:04:05' at time zone 'UTC' b, ` +
		`timestamp '2024-01-02 03:04:05.123456' AT TIME ZONE 'America/New_York' c, timestamp '2024-01-02 03:04:05 +05:30' d, ` +
		`timestamp '2024-01-02 03:04:05 UTC' at time zone '-08:00' e, hour(timestamp '2024-01-02 03:04:05' at time zone 'Asia/Tokyo') h`
	got := runNPMIn(t, ts.addr, "alice", "", "", npmStep{Name: "sel", SQL: sel})
	o := got["sel"].OK
	if o == nil {
		t.Fatalf("npm: %+v", got["sel"].Error)
	}
	const wantTypes = "[timestamp(3) with time zone timestamp(0) with time zone timestamp(6) with time zone timestamp(0) with time zone timestamp(0) with time zone bigint]"
	const wantRows = "[[2024-01-02 03:04:05.123 America/New_York 2024-01-02 03:04:05 UTC 2024-01-01 22:04:05.123456 America/New_York " +
		"2024-01-02 03:04:05 +05:30 2024-01-01 19:04:05 -08:00 12]]"
	if fmt.Sprint(o.Types) != wantTypes || fmt.Sprint(o.Rows) != wantRows {
		t.Errorf("npm: %v %v\n want %s %s", o.Types, o.Rows, wantTypes, wantRows)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var a, b, c, d, e time.Time
	var h int64
	if err := db.QueryRow(sel).Scan(&a, &b, &c, &d, &e, &h); err != nil {
		t.Fatal(err)
	}
	instant := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, c := range []struct {
		got  time.Time
		want time.Time
		zone string
	}{
		{a, time.Date(2024, 1, 2, 8, 4, 5, 123e6, time.UTC), "America/New_York"},
		{b, instant, "UTC"},
		{c, instant.Add(123456 * time.Microsecond), "America/New_York"},
		{d, instant.Add(-330 * time.Minute), ""},
		{e, instant, ""},
	} {
		if !c.got.Equal(c.want) || c.zone != "" && c.got.Location().String() != c.zone {
			t.Errorf("go client, column %d: %v (%s), want %v in %s", i, c.got, c.got.Location(), c.want, c.zone)
		}
	}
	if h != 12 {
		t.Errorf("hour in Tokyo: %d, want 12", h)
	}
}

// Trino's map(array[...], array[...]) on PostgreSQL (a jsonb object there) is announced as
// Trino's map of its literals' types and written as a JSON object, through both clients.
func TestMapsOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	const sel = `select map(array['a', 'bc'], array[1, 2]) m, map(array[1], array[true]) n, map(array['x'], array[3000000000]), ` +
		`element_at(map(array['a'], array[7]), 'a') e`
	got := runNPMIn(t, ts.addr, "alice", "", "", npmStep{Name: "sel", SQL: sel})
	o := got["sel"].OK
	if o == nil {
		t.Fatalf("npm: %+v", got["sel"].Error)
	}
	const wantTypes = "[map(varchar(2), integer) map(integer, boolean) map(varchar(1), bigint) integer]"
	const wantRows = "[[map[a:1 bc:2] map[1:true] map[x:3e+09] 7]]" // the probe's JSON read as float64
	if fmt.Sprint(o.Types) != wantTypes || fmt.Sprint(o.Rows) != wantRows || fmt.Sprint(o.Names) != "[m n _col2 e]" {
		t.Errorf("npm: %v %v %v\n want %s %s", o.Names, o.Types, o.Rows, wantTypes, wantRows)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var mm, nn any
	if err := db.QueryRow(`select map(array['a', 'bc'], array[1, 2]), map(array[1], array[true])`).Scan(&mm, &nn); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(mm) != "map[a:1 bc:2]" || fmt.Sprint(nn) != "map[1:true]" {
		t.Errorf("go client: %v %v", mm, nn)
	}
}

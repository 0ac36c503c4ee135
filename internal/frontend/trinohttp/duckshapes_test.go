package trinohttp

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"
)

// trinoColumnNames are statements on the embedded DuckDB and the column names Trino gives their
// results: an item that is neither a column nor aliased is _colN, N its position among the
// result's columns (LogicalPlanner's output names), a VALUES list's columns included (DuckDB
// names them col0, ...), and so is CURRENT_DATE and its kind unquoted (Trino's reserved words,
// a column to DuckDB's parse); a quoted "current_date" is a column.
var trinoColumnNames = map[string]string{
	"values 1, 2":                                                           "_col0",
	"VALUES (1, 'a'), (2, 'b')":                                             "_col0|_col1",
	"select * from (values (1, 2)) t":                                       "_col0|_col1",
	"select *, 3 from (values (1, 2))":                                      "_col0|_col1|_col2",
	"select * from (values (1, 2)) t(a, b)":                                 "a|b",
	"select 1, x, x + 1 as y, count(*) from (values 1) t(x) group by x":     "_col0|x|y|_col3",
	"select current_date, current_timestamp, localtimestamp, current_user":  "_col0|_col1|_col2|_col3",
	`select "current_date", current_date from (values 1) t("current_date")`: "current_date|_col1",
}

// TestTrinoColumnNamesOnDuckDB: both Trino clients see Trino's column names (trinoColumnNames).
func TestTrinoColumnNamesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var steps []npmStep
	for sql := range trinoColumnNames {
		rows, err := db.Query(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if got, want := strings.Join(cols, "|"), trinoColumnNames[sql]; err != nil || got != want {
			t.Errorf("trino-go-client: %s: columns %s (%v), want %s", sql, got, err, want)
		}
		steps = append(steps, npmStep{Name: sql, SQL: sql})
	}
	for sql, o := range runNPM(t, ts.addr, "alice", steps...) {
		if o.OK == nil || strings.Join(o.OK.Names, "|") != trinoColumnNames[sql] {
			t.Errorf("npm trino-client: %s: %+v %+v, want columns %s", sql, o.OK, o.Error, trinoColumnNames[sql])
		}
	}
}

// TestTrinoElementAtOnDuckDB: element_at(array, 0) fails as Trino's does (SQL array indices
// start at 1: INVALID_FUNCTION_ARGUMENT, where DuckDB answers NULL); past either end of an array,
// and for a key a map has not, it is NULL; a negative index counts from the end. Through
// trino-go-client and the npm trino-client.
func TestTrinoElementAtOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const answers = `select element_at(array[1, 2], 1), element_at(array[1, 2], 3), element_at(array[1, 2], -1),
		element_at(array[1, 2], -3), element_at(map(array['a'], array[1]), 'b'), element_at(map(array[0], array['zero']), 0)`
	const zero = "select element_at(array[1, 2], x - 1) from (values 1) t(x)"
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var first, past, last, before, missing sql.NullInt64
	var zeroKey string
	if err := db.QueryRow(answers).Scan(&first, &past, &last, &before, &missing, &zeroKey); err != nil {
		t.Fatal(err)
	}
	if first.Int64 != 1 || past.Valid || last.Int64 != 2 || before.Valid || missing.Valid || zeroKey != "zero" {
		t.Errorf("element_at: %v %v %v %v %v %q; want 1 NULL 2 NULL NULL zero", first, past, last, before, missing, zeroKey)
	}
	var v any
	err := db.QueryRow(zero).Scan(&v)
	var te *trino.ErrTrino
	if !errors.As(err, &te) || te.ErrorName != "INVALID_FUNCTION_ARGUMENT" || te.ErrorType != "USER_ERROR" ||
		!strings.Contains(te.Message, "SQL array indices start at 1") {
		t.Errorf("element_at(array, 0): %v, %v; want INVALID_FUNCTION_ARGUMENT: SQL array indices start at 1", v, err)
	}
	got := runNPM(t, ts.addr, "alice", npmStep{Name: "answers", SQL: answers}, npmStep{Name: "zero", SQL: zero})
	if o := got["answers"]; o.OK == nil || jsonText(t, o.OK.Rows) != `[[1,null,2,null,null,"zero"]]` {
		t.Errorf("npm element_at: %+v %+v", o.OK, o.Error)
	}
	if e := got["zero"].Error; e == nil || e.ErrorName != "INVALID_FUNCTION_ARGUMENT" || e.ErrorCode != 7 || !strings.Contains(e.Message, "SQL array indices start at 1") {
		t.Errorf("npm element_at(array, 0): %+v", e)
	}
}

// TestNPMTrinoClientShowOnDuckDB: the npm trino-client, its catalog and schema set as an
// application sets them, browses the embedded DuckDB as Trino's (duckengine's trinoshow.go):
// SHOW CATALOGS, SCHEMAS, TABLES (FROM, LIKE), COLUMNS, DESCRIBE and information_schema answer
// Trino's columns and the client's objects only; a column's Type is the type a result of it
// announces, in information_schema.columns too; a missing schema or table fails with Trino's
// error name. (information_schema.tables lists the client's tables only, not, as Trino's does,
// information_schema's own.)
func TestNPMTrinoClientShowOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: "duck", Schema: "main"})
	for _, s := range []string{"create table items (k bigint, v varchar, d decimal(12,3), ts timestamp, l integer[])",
		"create view item_names as select v from items", "create schema other", "create table other.elsewhere (x integer)"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	want := map[string]string{
		"show catalogs":                         `[Catalog] [["duck"]]`,
		"show schemas":                          `[Schema] [["main"],["other"]]`,
		"SHOW SCHEMAS FROM duck LIKE 'o%'":      `[Schema] [["other"]]`,
		"show tables":                           `[Table] [["item_names"],["items"]]`,
		"show tables from other":                `[Table] [["elsewhere"]]`,
		"show tables in duck.main like 'it_ms'": `[Table] [["items"]]`,
		"describe items": `[Column Type Extra Comment] [["k","bigint","",""],["v","varchar","",""],["d","decimal(12,3)","",""],` +
			`["ts","timestamp(6)","",""],["l","array(integer)","",""]]`,
		"show columns from other.elsewhere": `[Column Type Extra Comment] [["x","integer","",""]]`,
		"select table_schema, table_name from information_schema.tables order by 1, 2": `[table_schema table_name] ` +
			`[["main","item_names"],["main","items"],["other","elsewhere"]]`,
		"select column_name, data_type from information_schema.columns where table_name = 'items' order by ordinal_position": `[column_name data_type] ` +
			`[["k","bigint"],["v","varchar"],["d","decimal(12,3)"],["ts","timestamp(6)"],["l","array(integer)"]]`,
	}
	var steps []npmStep
	for sql := range want {
		steps = append(steps, npmStep{Name: sql, SQL: sql})
	}
	steps = append(steps, npmStep{Name: "no schema", SQL: "show tables from no_such"}, npmStep{Name: "no table", SQL: "describe no_such"})
	got := runNPMIn(t, ts.addr, "alice", "duck", "main", steps...)
	for sql, w := range want {
		o := got[sql]
		if o.OK == nil || fmt.Sprint(o.OK.Names)+" "+jsonText(t, o.OK.Rows) != w {
			t.Errorf("%s: %+v %+v\nwant %s", sql, o.OK, o.Error, w)
		}
	}
	for step, name := range map[string]string{"no schema": "SCHEMA_NOT_FOUND", "no table": "TABLE_NOT_FOUND"} {
		if e := got[step].Error; e == nil || e.ErrorName != name {
			t.Errorf("%s: %+v, want %s", step, e, name)
		}
	}
}

// TestTrinoTimePrecisionTypesOnDuckDB: Trino's types with a precision, timestamp(3),
// timestamp(6) with time zone, time(3), in a column definition and a cast (DuckDB's types take
// none: every such statement failed), run on the embedded DuckDB, a value cast to timestamp(3)
// keeping milliseconds; through trino-go-client and the npm trino-client.
func TestTrinoTimePrecisionTypesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	for _, s := range []string{"create table stamps (a timestamp(3), b timestamp(6) with time zone, c time(3), d timestamp (0))",
		"insert into stamps values (timestamp '2024-01-02 03:04:05.123', timestamp '2024-01-02 03:04:05.5 UTC', time '03:04:05.25', timestamp '2024-01-02 03:04:05')"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	const q = `select a, b, c, d, cast('2024-01-02 03:04:05.123456' as timestamp(3)), cast(a as timestamp(3) with time zone) from stamps`
	var a, b, c, d, e, f time.Time
	if err := db.QueryRow(q).Scan(&a, &b, &c, &d, &e, &f); err != nil {
		t.Fatal(err)
	}
	stamp := time.Date(2024, 1, 2, 3, 4, 5, 123e6, time.UTC)
	if !a.Equal(stamp) || !b.Equal(time.Date(2024, 1, 2, 3, 4, 5, 5e8, time.UTC)) || c.Format("15:04:05.000") != "03:04:05.250" ||
		!d.Equal(stamp.Truncate(time.Second)) || !e.Equal(stamp) || !f.Equal(stamp) {
		t.Errorf("got %v %v %v %v %v %v", a, b, c, d, e, f)
	}
	o := runNPM(t, ts.addr, "alice", npmStep{Name: "q", SQL: q})["q"]
	// timestamp(3) and timestamp(0) values with as many digits as Trino writes them
	// (TestTrinoTimestampPrecisionOnDuckDB), and the cast to timestamp(3) with time zone (its
	// statement declares it), the time(3) column in milliseconds as its table declares it
	// (trinotables.go); the zoned one microseconds, as declared.
	const want = `[["2024-01-02 03:04:05.123","2024-01-02 03:04:05.500000 UTC","03:04:05.250","2024-01-02 03:04:05",` +
		`"2024-01-02 03:04:05.123","2024-01-02 03:04:05.123 UTC"]]`
	if o.OK == nil || jsonText(t, o.OK.Rows) != want {
		t.Errorf("npm: %+v %+v\nwant %s", o.OK, o.Error, want)
	}
}

// TestNPMTrinoClientTypesOnDuckDB: the npm trino-client reads DuckDB's types as Trino's, each
// value in Trino's JSON encoding (decimals, dates, times and timestamps as text to the
// microsecond DuckDB keeps, a timestamp with a zone in UTC, varbinary in base64, a double's NaN
// and infinities as the strings Trino writes, a map an object, a row an array); Trino's nan(),
// infinity(), is_nan, is_infinite and is_finite answer.
func TestNPMTrinoClientTypesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const q = `select 'x' v, 9007199254740991 b, 7 i, 2.5e0 d, nan() n, -infinity() ni, 12.50::decimal(9,2) de,
		true bo, date '2024-01-02' dt, timestamp '2024-01-02 03:04:05.123456' ts, timestamptz '2024-01-02 03:04:05.678+02' tz,
		[1, null] a, map {'k': 1.5::double} m, {'f': 1, 'g': 'y'} r, '{"a": [1]}'::json j,
		'6ccd780c-baba-1026-9564-5b8c656024db'::uuid u, x'0102ff' vb, 1.5::real re, 3::tinyint ti, 4::smallint si,
		time '03:04:05.5' tm, is_nan(nan()) isn, is_infinite(infinity()) isi, is_finite(1e0) isf, infinity() inf`
	o := runNPM(t, ts.addr, "alice", npmStep{Name: "q", SQL: q})["q"]
	const types = `["varchar","bigint","integer","double","double","double","decimal(9,2)","boolean","date","timestamp(6)",` +
		`"timestamp(6) with time zone","array(integer)","map(varchar, double)","row(f integer, g varchar)","json","uuid",` +
		`"varbinary","real","tinyint","smallint","time(6)","boolean","boolean","boolean","double"]`
	const rows = `[["x",9007199254740991,7,2.5,"NaN","-Infinity","12.50",true,"2024-01-02","2024-01-02 03:04:05.123456",` +
		`"2024-01-02 01:04:05.678000 UTC",[1,null],{"k":1.5},[1,"y"],"{\"a\": [1]}","6ccd780c-baba-1026-9564-5b8c656024db",` +
		`"AQL/",1.5,3,4,"03:04:05.500000",true,true,true,"Infinity"]]`
	if o.OK == nil || jsonText(t, o.OK.Types) != types || jsonText(t, o.OK.Rows) != rows {
		t.Errorf("%+v %+v\nwant types %s\nwant rows  %s", o.OK, o.Error, types, rows)
	}
}

// TestTrinoArraySubscriptOnDuckDB: an array's subscript past its end, at 0 or negative fails as
// Trino's does (ArraySubscriptOperator.checkIndex: INVALID_FUNCTION_ARGUMENT with Trino's
// messages), where DuckDB answers NULL or counts from the end; within bounds, nested, on a
// column, with a NULL index and on a map it answers as Trino does. Through trino-go-client.
func TestTrinoArraySubscriptOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var second, nested, keyed, column int64
	var null sql.NullInt64
	err := db.QueryRow(`select array[1, 2][2], array[array[1, 2], array[3]][2][1], map(array['a'], array[1])['a'],
		x[1], array[1, 2][cast(null as integer)] from (select array[7, 8] as x)`).Scan(&second, &nested, &keyed, &column, &null)
	if err != nil || second != 2 || nested != 3 || keyed != 1 || column != 7 || null.Valid {
		t.Errorf("subscripts: %d %d %d %d %v (%v); want 2 3 1 7 NULL", second, nested, keyed, column, null, err)
	}
	for sql, message := range map[string]string{
		"select array[1, 2][5]":                      "Array subscript must be less than or equal to array length: 5 > 2",
		"select x[3] from (select array[1, 2] as x)": "Array subscript must be less than or equal to array length: 3 > 2",
		"select array[1, 2][0]":                      "SQL array indices start at 1",
		"select array[1, 2][-1]":                     "Array subscript is negative: -1",
	} {
		var v any
		err := db.QueryRow(sql).Scan(&v)
		var te *trino.ErrTrino
		if !errors.As(err, &te) || te.ErrorName != "INVALID_FUNCTION_ARGUMENT" || te.Message != message {
			t.Errorf("%s: %v, %v; want INVALID_FUNCTION_ARGUMENT: %s", sql, v, err, message)
		}
	}
}

// TestTrinoTimestampPrecisionOnDuckDB: timestamps are announced with the precision Trino gives
// them, and their values carry as many digits: a literal's is its fraction's digits
// (timestamp(0) without one), localtimestamp's and a cast to timestamp(3)'s are 3 (DuckDB's
// are all microseconds: timestamp(6) before). Through trino-go-client.
func TestTrinoTimestampPrecisionOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	rows, err := db.Query(`select timestamp '2020-01-01 12:00:00', timestamp '2020-01-01 12:00:00.123',
		timestamp '2020-01-01 12:00:00.123456', localtimestamp, cast('2020-01-01 12:00:00.1239' as timestamp(3))`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ct := range types {
		p, _, ok := ct.DecimalSize()
		got = append(got, fmt.Sprintf("%s(%d,%v)", ct.DatabaseTypeName(), p, ok))
	}
	if want := "TIMESTAMP(0,true) TIMESTAMP(3,true) TIMESTAMP(6,true) TIMESTAMP(3,true) TIMESTAMP(3,true)"; strings.Join(got, " ") != want {
		t.Errorf("types %s, want %s", strings.Join(got, " "), want)
	}
	var whole, milli, micro, local, cast time.Time
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	if err := rows.Scan(&whole, &milli, &micro, &local, &cast); err != nil {
		t.Fatal(err)
	}
	if whole.Nanosecond() != 0 || milli.Nanosecond() != 123_000_000 || micro.Nanosecond() != 123_456_000 ||
		local.Nanosecond()%1_000_000 != 0 || cast.Nanosecond() != 124_000_000 {
		t.Errorf("values %v %v %v %v %v", whole, milli, micro, local, cast)
	}
}

// trinoArithmeticTypes are expressions on the embedded DuckDB with the type and value Trino gives
// them (types.html: a decimal literal is decimal(its digits, its fraction's digits); an integer
// meets a decimal as decimal(10,0), and 0.5 is decimal(1,1) (its digits without the integer
// part's zero); p+q: decimal(1 + max(s1,s2) + max(p1-s1, p2-s2), max(s1,s2)),
// p*q: decimal(p1+p2, s1+s2); integer division truncates toward zero).
var trinoArithmeticTypes = []struct{ sql, typ, value string }{
	{"1.5", "decimal(2,1)", "1.5"},
	{"7 / 2", "integer", "3"},
	{"-7 / 2", "integer", "-3"},
	{"7 % 3", "integer", "1"},
	{"1.5 * 2", "decimal(12,1)", "3.0"},
	{"1.5 + 1", "decimal(12,1)", "2.5"},
	{"10.25 - 0.5", "decimal(5,2)", "9.75"},
	{"0.5", "decimal(1,1)", "0.5"},
	{"0.05", "decimal(2,2)", "0.05"},
	{"1.25 * 0.5", "decimal(4,3)", "0.625"},
	{"0.5 + 0.25", "decimal(3,2)", "0.75"},
	{"cast(1.5 as decimal(4,2)) + 1", "decimal(13,2)", "2.50"},
	// a / b: decimal(min(38, p1 + s2 + max(0, s2 - s1)), max(s1, s2)), rounded half up
	{"1.5 / 2", "decimal(2,1)", "0.8"},
	{"7.5 / 2", "decimal(2,1)", "3.8"},
	{"-7.5 / 2", "decimal(2,1)", "-3.8"},
	{"0.3 / 2", "decimal(1,1)", "0.2"}, // 0.15 exactly: a double's 0.1499... would round down
	{"10.25 / 0.5", "decimal(5,2)", "20.50"},
	{"1 / 3.0", "decimal(12,1)", "0.3"},
	{"2 / -3.0", "decimal(12,1)", "-0.7"},
	{"cast(1 as decimal(10,2)) / 3", "decimal(10,2)", "0.33"},
	{"decimal '1.50' / integer '4'", "decimal(3,2)", "0.38"},
}

// TestTrinoArithmeticTypesOnDuckDB: decimal literals and integer and decimal arithmetic have
// Trino's types and values (trinoArithmeticTypes), through trino-go-client and the npm
// trino-client.
func TestTrinoArithmeticTypesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var steps []npmStep
	for _, c := range trinoArithmeticTypes {
		rows, err := db.Query("select " + c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		types, err := rows.ColumnTypes()
		if err != nil || !rows.Next() {
			t.Fatalf("%s: %v %v", c.sql, err, rows.Err())
		}
		var v any
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		typ := strings.ToLower(types[0].DatabaseTypeName())
		if p, s, ok := types[0].DecimalSize(); ok && typ == "decimal" {
			typ = fmt.Sprintf("decimal(%d,%d)", p, s)
		}
		if typ != c.typ || fmt.Sprint(v) != c.value {
			t.Errorf("trino-go-client: %s: %s %v, want %s %s", c.sql, typ, v, c.typ, c.value)
		}
		steps = append(steps, npmStep{Name: c.sql, SQL: "select " + c.sql})
	}
	outcomes := runNPM(t, ts.addr, "alice", steps...)
	for _, c := range trinoArithmeticTypes {
		o := outcomes[c.sql]
		if o.OK == nil || len(o.OK.Types) != 1 || len(o.OK.Rows) != 1 || o.OK.Types[0] != c.typ || fmt.Sprint(o.OK.Rows[0][0]) != c.value {
			t.Errorf("npm trino-client: %s: %+v %+v, want %s %s", c.sql, o.OK, o.Error, c.typ, c.value)
		}
	}
}

// TestTrinoDeclaredTypesOnDuckDB: now(), current_timestamp and from_unixtime are Trino's
// timestamp(3) with time zone, their values in milliseconds, and cast(x as varchar(n)) is
// varchar(n), on the embedded DuckDB (whose types are TIMESTAMPTZ in microseconds and VARCHAR),
// where the select item is one of them; through trino-go-client's column types and the npm
// trino-client.
func TestTrinoDeclaredTypesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	const q = `select now(), current_timestamp as ts, from_unixtime(1700000000) f, cast(x as varchar(3)) v,
		cast(x as varchar) w, 1 i from (values 'ab') t(x)`
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil || !rows.Next() {
		t.Fatalf("%v %v", err, rows.Err())
	}
	var now, ts2, f time.Time
	var v, w string
	var i int
	if err := rows.Scan(&now, &ts2, &f, &v, &w, &i); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var got []string
	for _, c := range types {
		typ := strings.ToLower(c.DatabaseTypeName())
		if n, ok := c.Length(); ok && n != trinoVarcharMax {
			typ += fmt.Sprintf("(%d)", n)
		}
		if p, _, ok := c.DecimalSize(); ok {
			typ += fmt.Sprintf("(%d)", p)
		}
		got = append(got, typ)
	}
	const want = "timestamp with time zone(3)|timestamp with time zone(3)|timestamp with time zone(3)|varchar(3)|varchar|integer"
	if strings.Join(got, "|") != want {
		t.Errorf("trino-go-client's types %q, want %s", got, want)
	}
	if now.Nanosecond()%1e6 != 0 || ts2.Nanosecond()%1e6 != 0 || !f.Equal(time.Unix(1700000000, 0)) || v != "ab" || w != "ab" {
		t.Errorf("values %v %v %v %q %q", now, ts2, f, v, w)
	}
	o := runNPM(t, ts.addr, "alice", npmStep{Name: "q", SQL: q})["q"]
	const npmTypes = `["timestamp(3) with time zone","timestamp(3) with time zone","timestamp(3) with time zone","varchar(3)","varchar","integer"]`
	if o.OK == nil || jsonText(t, o.OK.Types) != npmTypes || len(o.OK.Rows) != 1 || fmt.Sprint(o.OK.Rows[0][2]) != "2023-11-14 22:13:20.000 UTC" {
		t.Errorf("npm: %+v %+v\nwant types %s", o.OK, o.Error, npmTypes)
	}
}

const trinoVarcharMax = 2147483647

// TestTrinoTableDeclaredTypesOnDuckDB: trino-go-client reads a DuckDB table's columns as the
// Trino client declared them (DuckDB keeps VARCHAR, TIMESTAMPTZ and TIME), values included, and
// SHOW COLUMNS lists the same types.
func TestTrinoTableDeclaredTypesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	for _, s := range []string{
		"create table typed (v varchar(5), c char(3), tz timestamp(3) with time zone, tm time(3), w varchar)",
		"insert into typed values ('ab', 'x', timestamp '2024-01-02 03:04:05.678912 UTC', time '03:04:05.678912', 'y')",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	rows, err := db.Query("select * from typed")
	if err != nil {
		t.Fatal(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil || !rows.Next() {
		t.Fatalf("%v %v", err, rows.Err())
	}
	var v, c, tm, w string
	var tz time.Time
	if err := rows.Scan(&v, &c, &tz, &tm, &w); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var got []string
	for _, ct := range types {
		typ := strings.ToLower(ct.DatabaseTypeName())
		if n, ok := ct.Length(); ok && n != trinoVarcharMax {
			typ += fmt.Sprintf("(%d)", n)
		}
		if p, _, ok := ct.DecimalSize(); ok {
			typ += fmt.Sprintf("(%d)", p)
		}
		got = append(got, typ)
	}
	const want = "varchar(5)|char(3)|timestamp with time zone(3)|time(3)|varchar"
	if strings.Join(got, "|") != want {
		t.Errorf("trino-go-client's types %q, want %s", got, want)
	}
	if v != "ab" || c != "x  " || !tz.Equal(time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC)) || tm != "0000-01-01T03:04:05.678Z" || w != "y" {
		t.Errorf("values %q %q %v %q %q", v, c, tz, tm, w)
	}
	shown := scanAll(t, must(db.Query("show columns from typed")))
	if s := fmt.Sprint(shown); s != "[[v varchar(5)  ] [c char(3)  ] [tz timestamp(3) with time zone  ] [tm time(3)  ] [w varchar  ]]" {
		t.Errorf("show columns: %s", s)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestTrinoIntervalsAndFunctionsOnDuckDB: Trino's interval literals with a qualifier (DuckDB's
// parser refuses year to month and day to second) are the intervals Trino writes, year to month
// typed so; Java's format, array_join and current_timezone() answer as Trino's. Through the npm
// trino-client and trino-go-client.
func TestTrinoIntervalsAndFunctionsOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const intervals = `select interval '1-2' year to month a, interval '-1-2' year to month b, interval '1 02:03:04.5' day to second c,
		interval '3 04' day to hour d, interval '05:06' minute to second e, interval '1' year f, interval '-2 01:02' day to minute g`
	const functions = `select format('%s-%d', 'a', 1), array_join(array['a', null, 'b'], ','), array_join(array[1, null], '|', 'x'),
		current_timezone()`
	got := runNPM(t, ts.addr, "alice", npmStep{Name: "intervals", SQL: intervals}, npmStep{Name: "functions", SQL: functions})
	const (
		wantTypes = `["interval year to month","interval year to month","interval day to second","interval day to second",` +
			`"interval day to second","interval year to month","interval day to second"]`
		wantRows = `[["1-2","-1-2","1 02:03:04.500","3 04:00:00.000","0 00:05:06.000","1-0","-2 01:02:00.000"]]`
	)
	if o := got["intervals"]; o.OK == nil || jsonText(t, o.OK.Types) != wantTypes || jsonText(t, o.OK.Rows) != wantRows {
		t.Errorf("intervals: %+v %+v\nwant types %s\nwant rows  %s", o.OK, o.Error, wantTypes, wantRows)
	}
	if o := got["functions"]; o.OK == nil || len(o.OK.Rows) != 1 || fmt.Sprint(o.OK.Rows[0][:3]) != "[a-1 a,b 1|x]" || o.OK.Rows[0][3] == "" {
		t.Errorf("functions: %+v %+v", o.OK, o.Error)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var a, c string
	if err := db.QueryRow("select interval '1-2' year to month, interval '1 02:03:04.5' day to second").Scan(&a, &c); err != nil || a != "1-2" || c != "1 02:03:04.500" {
		t.Errorf("trino-go-client: %q %q %v", a, c, err)
	}
}

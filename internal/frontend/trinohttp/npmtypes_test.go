package trinohttp

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"
)

// Trino's declared types through the npm trino-client, beyond SELECT 1, on both engines a Trino
// client meets: a cast to timestamp(3) with time zone, a decimal and a varchar(n) read as Trino
// types them and writes them (the timestamp in whole milliseconds, the zone's offset applied),
// whether the engine kept the precision and length (PostgreSQL's type modifiers) or forgot them
// (DuckDB: the statement's text declares them). now() plus or minus an interval keeps Trino's
// timestamp(3) with time zone on DuckDB, and a timestamp literal its digits' precision. On PostgreSQL a table's varchar(n), timestamp(p),
// timestamptz(p) and time(p) columns read as Trino's varchar(n), timestamp(p), ... as well.
func TestNPMTrinoDeclaredTypesOnDuckDBAndPostgres(t *testing.T) {
	const (
		declared = `select cast('2024-01-02 03:04:05.678+02' as timestamp(3) with time zone) tz,
			cast(1.25 as decimal(8,2)) d, cast('ab' as varchar(5)) v`
		wantTypes = `["timestamp(3) with time zone","decimal(8,2)","varchar(5)"]`
		wantRow   = `[["2024-01-02 01:04:05.678 UTC","1.25","ab"]]`
	)
	for _, engine := range []string{"duckdb", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			backend := duckBackend
			if engine == "postgres" {
				backend = postgresBackend
			}
			ts := startServer(t, backend(t), Options{})
			got := runNPM(t, ts.addr, "alice", npmStep{Name: "declared", SQL: declared})
			if o := got["declared"]; o.OK == nil || jsonText(t, o.OK.Types) != wantTypes || jsonText(t, o.OK.Rows) != wantRow {
				t.Errorf("%+v %+v\nwant types %s\nwant rows  %s", o.OK, o.Error, wantTypes, wantRow)
			}
		})
	}

	t.Run("duckdb now() and intervals", func(t *testing.T) {
		ts := startServer(t, duckBackend(t), Options{})
		o := runNPM(t, ts.addr, "alice", npmStep{Name: "now",
			SQL: "select now() + interval '1' day a, current_timestamp - interval '2' hour b, now() + interval '1' month c"})["now"]
		const want = `["timestamp(3) with time zone","timestamp(3) with time zone","timestamp(3) with time zone"]`
		if o.OK == nil || jsonText(t, o.OK.Types) != want || len(o.OK.Rows) != 1 {
			t.Fatalf("%+v %+v\nwant types %s", o.OK, o.Error, want)
		}
		millis := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$`)
		for i, v := range o.OK.Rows[0] {
			if s, _ := v.(string); !millis.MatchString(s) {
				t.Errorf("column %d: %v, want a timestamp in whole milliseconds", i, v)
			}
		}
		// A timestamp literal's precision is the digits it writes, an interval added or not.
		o = runNPM(t, ts.addr, "alice", npmStep{Name: "literal", SQL: "select timestamp '2024-01-02 03:04:05.678' + interval '1' day a, " +
			"timestamp '2024-01-02 03:04:05.6789' b, timestamp '2024-01-02 03:04:05' - interval '1' hour c"})["literal"]
		const (
			wantLiteral     = `["timestamp(3)","timestamp(4)","timestamp(0)"]`
			wantLiteralRows = `[["2024-01-03 03:04:05.678","2024-01-02 03:04:05.6789","2024-01-02 02:04:05"]]`
		)
		if o.OK == nil || jsonText(t, o.OK.Types) != wantLiteral || jsonText(t, o.OK.Rows) != wantLiteralRows {
			t.Errorf("%+v %+v\nwant types %s\nwant rows  %s", o.OK, o.Error, wantLiteral, wantLiteralRows)
		}
	})

	// A table's declared types: PostgreSQL keeps them; DuckDB keeps neither a length nor a
	// precision, and the proxy reads them from the CREATE TABLE it ran.
	for _, engine := range []string{"duckdb", "postgres"} {
		t.Run(engine+" table columns", func(t *testing.T) {
			backend := duckBackend
			if engine == "postgres" {
				backend = postgresBackend
			}
			ts := startServer(t, backend(t), Options{})
			got := runNPM(t, ts.addr, "alice",
				npmStep{Name: "create", SQL: "create table typed (v varchar(5), ts timestamp(3), tz timestamp(0) with time zone, tm time(3), u varchar, d decimal(10,3), c char(3))"},
				npmStep{Name: "insert", SQL: "insert into typed values ('ab', '2024-01-02 03:04:05.678', '2024-01-02 03:04:05+02', '03:04:05.678', 'x', 1.5, 'x')"},
				npmStep{Name: "read", SQL: "select * from typed"},
				npmStep{Name: "some", SQL: "select c, typed.v as w, tm t, u || 'y' from typed where d > 1"})
			const (
				want     = `["varchar(5)","timestamp(3)","timestamp(0) with time zone","time(3)","varchar","decimal(10,3)","char(3)"]`
				wantRow  = `[["ab","2024-01-02 03:04:05.678","2024-01-02 01:04:05 UTC","03:04:05.678","x","1.500","x  "]]`
				wantSome = `["char(3)","varchar(5)","time(3)","varchar"]`
			)
			if o := got["read"]; o.OK == nil || jsonText(t, o.OK.Types) != want || jsonText(t, o.OK.Rows) != wantRow {
				t.Errorf("%+v %+v\nwant types %s\nwant rows  %s", o.OK, o.Error, want, wantRow)
			}
			if o := got["some"]; o.OK == nil || jsonText(t, o.OK.Types) != wantSome || jsonText(t, o.OK.Rows) != `[["x  ","ab","03:04:05.678","xy"]]` {
				t.Errorf("%+v %+v\nwant types %s", o.OK, o.Error, wantSome)
			}
			if engine == "postgres" {
				return
			}
			got = runNPM(t, ts.addr, "alice", npmStep{Name: "describe", SQL: "describe typed"},
				npmStep{Name: "info", SQL: "select data_type from information_schema.columns where table_name = 'typed' order by ordinal_position"})
			const wantDescribe = `[["v","varchar(5)","",""],["ts","timestamp(3)","",""],["tz","timestamp(0) with time zone","",""],["tm","time(3)","",""],` +
				`["u","varchar","",""],["d","decimal(10,3)","",""],["c","char(3)","",""]]`
			if o := got["describe"]; o.OK == nil || jsonText(t, o.OK.Rows) != wantDescribe {
				t.Errorf("describe: %+v %+v\nwant %s", o.OK, o.Error, wantDescribe)
			}
			const wantInfo = `[["varchar(5)"],["timestamp(3)"],["timestamp(0) with time zone"],["time(3)"],["varchar"],["decimal(10,3)"],["char(3)"]]`
			if o := got["info"]; o.OK == nil || jsonText(t, o.OK.Rows) != wantInfo {
				t.Errorf("information_schema.columns: %+v %+v\nwant %s", o.OK, o.Error, wantInfo)
			}
		})
	}
}

// TestTrinoNowOnPostgres: now() and current_timestamp on PostgreSQL are Trino's timestamp(3)
// with time zone, an interval added or not, and a timestamp literal's precision its digits, in
// trino-go-client's column types and the npm trino-client's, values in whole milliseconds; a
// cast's declared precision stays PostgreSQL's.
func TestTrinoNowOnPostgres(t *testing.T) {
	ts := startServer(t, postgresBackend(t), Options{})
	const q = `select now(), current_timestamp ts, now() + interval '1' day d, timestamp '2024-01-02 03:04:05.6789' l,
		cast(now() as timestamp(6) with time zone) c6, 1 i`
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil || !rows.Next() {
		t.Fatalf("%v %v", err, rows.Err())
	}
	var now, ts2, d, l, c6 time.Time
	var i int
	if err := rows.Scan(&now, &ts2, &d, &l, &c6, &i); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var got []string
	for _, c := range types {
		typ := strings.ToLower(c.DatabaseTypeName())
		if p, _, ok := c.DecimalSize(); ok {
			typ += fmt.Sprintf("(%d)", p)
		}
		got = append(got, typ)
	}
	const want = "timestamp with time zone(3)|timestamp with time zone(3)|timestamp with time zone(3)|timestamp(4)|timestamp with time zone(6)|integer"
	if strings.Join(got, "|") != want {
		t.Errorf("trino-go-client's types %q, want %s", got, want)
	}
	if now.Nanosecond()%1e6 != 0 || ts2.Nanosecond()%1e6 != 0 || d.Nanosecond()%1e6 != 0 || l.Nanosecond() != 678_900_000 {
		t.Errorf("values %v %v %v %v", now, ts2, d, l)
	}
	o := runNPM(t, ts.addr, "alice", npmStep{Name: "q", SQL: q})["q"]
	const npmTypes = `["timestamp(3) with time zone","timestamp(3) with time zone","timestamp(3) with time zone","timestamp(4)","timestamp(6) with time zone","integer"]`
	if o.OK == nil || jsonText(t, o.OK.Types) != npmTypes || len(o.OK.Rows) != 1 {
		t.Fatalf("npm: %+v %+v\nwant types %s", o.OK, o.Error, npmTypes)
	}
	millis := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$`)
	for c, v := range o.OK.Rows[0][:3] {
		if s, _ := v.(string); !millis.MatchString(s) {
			t.Errorf("column %d: %v, want a timestamp in whole milliseconds", c, v)
		}
	}
	if o.OK.Rows[0][3] != "2024-01-02 03:04:05.6789" || !regexp.MustCompile(`\.\d{6} UTC$`).MatchString(fmt.Sprint(o.OK.Rows[0][4])) {
		t.Errorf("npm rows %v", o.OK.Rows)
	}
}

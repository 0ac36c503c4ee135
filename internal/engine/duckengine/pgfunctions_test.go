package duckengine

import (
	"context"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestPGFunctionRewrites: a PostgreSQL client's call of a function DuckDB answers otherwise is
// the compatibility macro's, its FILTER written into the argument, its DISTINCT the macro's
// own; a window, an ORDER BY among its arguments and a qualified name are left as written.
func TestPGFunctionRewrites(t *testing.T) {
	for in, want := range map[string]string{
		"select sum(x), Sum (y) from t":                                                                       "select qfpg_sum(x), qfpg_sum (y) from t",
		"SELECT sum(DISTINCT x) FILTER (WHERE x < 3) FROM t":                                                  "SELECT qfpg_sum_distinct(CASE WHEN x < 3 THEN  x END) FROM t",
		"select sum(x) over (order by x), s.sum(x), sum from t":                                               "select qfpg_sum__over(sum(x) over (order by x), x), s.sum(x), sum from t",
		"select sum(a + b) over w from t window w as ()":                                                      "select qfpg_sum__over(sum(a + b) over w, a + b) from t window w as ()",
		"select jsonb_agg(name order by name) filter (where x) from t":                                        "select qfpg_jsonb_agg(list(name order by name) filter (where x)) from t",
		"select json_agg(t) from t":                                                                           "select qfpg_json_agg(list(t)) from t",
		"select generate_series(1, 2), x from generate_series(1, 3) x, lateral generate_series(1, x) as y(n)": "select qfpg_generate_series(1, 2), x from qfpg_generate_series_rows(1, 3) x(x), lateral qfpg_generate_series_rows(1, x) as y(n)",
		"select to_char(d, 'FMMonth DD, YYYY \"at\" HH24:MI'), to_char(n, '999')":                             "select qfpg_to_char(d, '%B %d, %Y at %H:%M'), qfpg_to_char__number(n, '999')",
		"select extract(year from d), EXTRACT('Epoch' FROM t), extract(julian from d) from t":                 "select qfpg_extract('year', d), qfpg_extract__epoch( t), extract(julian from d) from t",
		"select json_build_object('a', length(b)) from t":                                                     "select json_object('a', qfpg_length(b)) from t",
		`select id from t where t.data @> $1::jsonb and "data" ? 'k''s' and data #>> '{a,0}' = 'x'`:           `select id from t where  qfpg_json_contains(t.data, $1) and  json_exists("data", '$."k''s"') and  json_extract_string(data, '$."a"[0]') = 'x'`,
		"select tags @> array['y'], f(x) ? 'k', data #> $1 from t":                                            "select tags @> array['y'], f(x) ? 'k', data #> $1 from t",
	} {
		if got := pgCompat(pgRequest(in)); got != want {
			t.Errorf("pgCompat(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSumTypesByProtocol: a sum of integers is a bigint for a PostgreSQL client (but of a
// bigint, a numeric) and for a Trino client (of a bigint too); a MySQL or Flight SQL client
// keeps DuckDB's 128-bit integer (MySQL's is a DECIMAL).
func TestSumTypesByProtocol(t *testing.T) {
	e := openMemory(t)
	const sqlText = "select sum(x), sum(x::bigint) from (values (1), (2)) t(x)"
	for protocol, want := range map[string][2]string{
		query.ProtocolPostgres: {"BIGINT", "HUGEINT"}, query.ProtocolTrino: {"BIGINT", "BIGINT"},
		query.ProtocolMySQL: {"HUGEINT", "HUGEINT"}, query.ProtocolFlightSQL: {"HUGEINT", "HUGEINT"},
	} {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: sqlText, Protocol: protocol})
		if err != nil {
			t.Fatalf("%s: %v", protocol, err)
		}
		b, err := rows.Next(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", protocol, err)
		}
		var got [2]string
		for i := range got {
			got[i], _ = b.Schema().Field(i).Metadata.GetValue(engine.MetaDuckDBType)
		}
		rows.Close()
		if got != want {
			t.Errorf("%s: sums are %v, want %v", protocol, got, want)
		}
	}
}

// TestDivisionByProtocol: PostgreSQL's and Trino's clients divide integers as integers, toward
// zero; MySQL's and Flight SQL's exactly (division.go), MySQL's by zero to NULL as MySQL does.
// Trino's 7.5 / 2 is its decimal(2,1), rounded half up.
func TestDivisionByProtocol(t *testing.T) {
	e := openMemory(t)
	const sqlText = "select 7/2, -7/2, 100 * 3 / 7 / 2, 7.5 / 2, 7 /* a / b */ / 2, 7 /-2, 7/+2"
	for protocol, want := range map[string]string{
		query.ProtocolPostgres: "3 -3 21 3.75 3 -3 3", query.ProtocolTrino: "3 -3 21 3.8 3 -3 3",
		query.ProtocolMySQL:     "3.5 -3.5 21.428571428571427 3.75 3.5 -3.5 3.5",
		query.ProtocolFlightSQL: "3.5 -3.5 21.428571428571427 3.75 3.5 -3.5 3.5",
	} {
		if got := firstRowText(t, e, protocol, sqlText); got != want {
			t.Errorf("%s: %s = %s, want %s", protocol, sqlText, got, want)
		}
	}
	if got := firstRowText(t, e, query.ProtocolMySQL, "select 7/0, 7 DIV 2"); got != "(null) 3" {
		t.Errorf("MySQL: 7/0, 7 DIV 2 = %s, want (null) 3", got)
	}
}

// firstRowText is the first row of sqlText run for a client of protocol, its values in text.
func firstRowText(t *testing.T, e query.Engine, protocol, sqlText string) string {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sqlText, Protocol: protocol})
	if err != nil {
		t.Fatalf("%s: %s: %v", protocol, sqlText, err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatalf("%s: %s: %v", protocol, sqlText, err)
	}
	vals := make([]string, b.NumCols())
	for i := range vals {
		vals[i] = b.Column(i).ValueStr(0)
	}
	return strings.Join(vals, " ")
}

// TestRegexSearchesAsPostgreSQL: a PostgreSQL client's ~, !~, ~* and !~* find the pattern
// anywhere, and SIMILAR TO reads SQL's patterns (DuckDB's ~ matches whole, its SIMILAR TO reads
// a regular expression); a parameter pattern searches too. A MySQL client's ~ stays DuckDB's.
func TestRegexSearchesAsPostgreSQL(t *testing.T) {
	e := openMemory(t)
	for sqlText, want := range map[string]string{
		"select 'abc' ~ 'b', 'abc' !~ 'b', 'ABC' ~* 'b', 'ABC' !~* 'b', 'abc' ~ '^b'":                              "true false true false false",
		"select 'abc' similar to 'a%', 'abc' similar to '(a|x)_c', 'abc' similar to 'a.c', 'a.c' similar to 'a.c'": "true true false true",
		"select 'abc' not similar to 'b%', 'a%' similar to 'a\\%', 'ab' similar to 'a\\%'":                         "true true false",
	} {
		if got := firstRowText(t, e, query.ProtocolPostgres, sqlText); got != want {
			t.Errorf("%s = %s, want %s", sqlText, got, want)
		}
	}
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "select 'abc' ~ $1, 'ABC' ~* $1", Protocol: query.ProtocolPostgres, Args: []any{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Column(0).ValueStr(0) + " " + b.Column(1).ValueStr(0); got != "true true" {
		t.Errorf("~ $1, ~* $1 with b: %s, want true true", got)
	}
	rows.Close()
	if got := firstRowText(t, e, query.ProtocolFlightSQL, "select 'abc' ~ 'b'"); got != "false" {
		t.Errorf("Flight SQL: 'abc' ~ 'b' = %s, want DuckDB's false", got)
	}
}

// TestTrinoFunctionsOnDuckDB: Trino's functions that DuckDB names otherwise, or takes other
// arguments for, answer a Trino client as Trino's do.
func TestTrinoFunctionsOnDuckDB(t *testing.T) {
	e := openMemory(t)
	for sqlText, want := range map[string]string{
		"select regexp_like('abc', 'b'), regexp_like('abc', '^b')":                              "true false",
		"select date_add('day', 1, date '2024-01-31'), date_add('month', 1, date '2024-01-31')": "2024-02-01 2024-02-29",
		"select date_add('hour', 2, timestamp '2024-01-01 10:00:00')":                           "2024-01-01T12:00:00",
		"select replace('abcb', 'b'), replace('abcb', 'b', 'x')":                                "ac axcx",
		"select to_unixtime(timestamp '1970-01-02 00:00:00'), day_of_week(date '2024-03-03')":   "86400 7",
		"select day_of_year(date '2024-02-01'), last_day_of_month(date '2024-02-10')":           "32 2024-02-29",
		"select json_extract_scalar('{\"a\": 1}', '$.a'), array_max([1, 3]), array_min([1, 3])": "1 3 1",
		"select approx_distinct(x) from (values (1), (2), (2)) t(x)":                            "2",
		// VALUES 1, 2 is rows; ROW(...) a row; a parenthesized row stays one
		"select count(*), sum(x) from (values 1, 2, (1+1)*2) t(x)":                 "3 7",
		"select count(*), max(y) from (values row(1, 'a'), (2, 'b')) t(x, y)":      "2 b",
		"select x from (values 5) t(x) union all values 6 order by x desc limit 1": "6",
		// element_at: 1-based, negative from the end, NULL past either end or for a missing key
		"select element_at(array[1, 2, 3], 2), element_at(array[1, 2, 3], -1), element_at(array[1, 2, 3], 5)":           "2 3 (null)",
		"select element_at(map(array['a'], array[1]), 'a'), element_at(map(array['a'], array[1]), 'b')":                 "1 (null)",
		"select format_datetime(timestamp '2024-03-04 05:06:07.891', 'yyyy-MM-dd HH:mm:ss.SSS EEE MMM d h a ''at'' D')": "2024-03-04 05:06:07.891 Mon Mar 4 5 AM at 64",
	} {
		if got := firstRowText(t, e, query.ProtocolTrino, sqlText); got != want {
			t.Errorf("%s = %s, want %s", sqlText, got, want)
		}
	}
	if got := firstRowText(t, e, query.ProtocolTrino, "select from_unixtime(0) = timestamptz '1970-01-01 00:00:00+00'"); got != "true" {
		t.Errorf("from_unixtime(0): %s, want the epoch", got)
	}
}

// TestTrinoDateAndAggregateFunctionsOnDuckDB: date_diff, date_trunc of a date, truncate,
// count_if (a bigint), arbitrary, dow and doy answer a Trino client as Trino's do.
func TestTrinoDateAndAggregateFunctionsOnDuckDB(t *testing.T) {
	e := openMemory(t)
	for sqlText, want := range map[string]string{
		"select date_diff('day', date '2024-01-01', date '2024-03-01'), date_diff('month', date '2024-01-31', date '2024-03-30')": "60|1",
		"select truncate(2.7), date_trunc('month', date '2024-02-29'), dow(date '2024-03-03'), doy(date '2024-02-01')":            "2|2024-02-01|7|32",
		"select count_if(x > 1), arbitrary(x) >= 1 from (values (1), (2), (3)) t(x)":                                              "2|true",
	} {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: sqlText, Protocol: query.ProtocolTrino})
		if err != nil {
			t.Errorf("%s: %v", sqlText, err)
			continue
		}
		b, err := rows.Next(context.Background())
		if err != nil {
			rows.Close()
			t.Fatalf("%s: %v", sqlText, err)
		}
		var got []string
		for i := range int(b.NumCols()) {
			got = append(got, b.Column(i).ValueStr(0))
		}
		if typ, _ := b.Schema().Field(0).Metadata.GetValue(engine.MetaDuckDBType); strings.HasPrefix(sqlText, "select count_if") && typ != "BIGINT" {
			t.Errorf("count_if is %s, want Trino's bigint", typ)
		}
		rows.Close()
		if g := strings.Join(got, "|"); g != want {
			t.Errorf("%s: %s, want %s", sqlText, g, want)
		}
	}
}

// openMemory opens the engine on an in-memory database for the test.
func openMemory(t testing.TB) query.Engine {
	t.Helper()
	e, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

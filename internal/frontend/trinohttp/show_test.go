package trinohttp

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"
)

// TestTrinoShowStatementsOnDuckDB: a Trino client browses the embedded DuckDB as Trino's: SHOW
// CATALOGS, SCHEMAS, TABLES (optionally FROM and LIKE) list the client's objects only, under
// Trino's column names; DESCRIBE and SHOW COLUMNS give each column's type as the type this
// frontend announces for that column in a result; a missing catalog, schema or table fails
// with Trino's error name; current_user is the client's user.
func TestTrinoShowStatementsOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: "duck", Schema: "main"})
	const columns = `k bigint, n integer, s smallint, ti tinyint, h hugeint, d double, r float, dec decimal(12,3),
		v varchar, b boolean, dt date, ts timestamp, tz timestamptz, tm time, bl blob, u uuid, l integer[], j json`
	for _, s := range []string{"create table items (" + columns + ")", "create table orders (id integer)",
		"create view item_names as select v from items", "create schema other", "create table other.elsewhere (x integer)"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	list := func(sql string) ([]string, []string) {
		t.Helper()
		rows, err := db.Query(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []string
		for _, r := range scanAll(t, rows) {
			out = append(out, strings.TrimSpace(fmt.Sprintln(r...)))
		}
		return cols, out
	}
	for sql, want := range map[string]string{
		"show catalogs":                            "[Catalog] [duck]",
		"show catalogs like 'du%'":                 "[Catalog] [duck]",
		"show schemas":                             "[Schema] [main other]",
		"SHOW SCHEMAS FROM duck LIKE 'o%'":         "[Schema] [other]",
		"show tables":                              "[Table] [item_names items orders]",
		"show tables from other":                   "[Table] [elsewhere]",
		"show tables in duck.main like 'item%'":    "[Table] [item_names items]",
		`show tables from "duck"."main" like '%s'`: "[Table] [item_names items orders]",
		"select table_name from information_schema.tables where table_schema = 'main' order by 1": "[table_name] [item_names items orders]",
	} {
		cols, rows := list(sql)
		if got := fmt.Sprint(cols, rows); got != want {
			t.Errorf("%s: got %s, want %s", sql, got, want)
		}
	}

	announced, _ := columnTypes(t, ts.addr, "select * from duck.main.items")
	for _, sql := range []string{"describe items", "DESC duck.main.items", "show columns from main.items",
		"select column_name, data_type from information_schema.columns where table_name = 'items' order by ordinal_position"} {
		cols, rows := list(sql)
		if !slices.Equal(cols, []string{"Column", "Type", "Extra", "Comment"}) && !strings.HasPrefix(sql, "select") {
			t.Errorf("%s: columns %v", sql, cols)
		}
		var names, types []string
		for _, r := range rows {
			f := strings.Fields(r)
			names, types = append(names, f[0]), append(types, strings.Join(f[1:], " "))
		}
		wantNames := []string{"k", "n", "s", "ti", "h", "d", "r", "dec", "v", "b", "dt", "ts", "tz", "tm", "bl", "u", "l", "j"}
		if !slices.Equal(names, wantNames) || !slices.Equal(types, announced) {
			t.Errorf("%s:\n  names %v\n  types %v\n  want the result's types %v", sql, names, types, announced)
		}
	}

	for sql, want := range map[string]string{
		"describe no_such_table":        "TABLE_NOT_FOUND",
		"show tables from no_such":      "SCHEMA_NOT_FOUND",
		"show schemas from no_such":     "CATALOG_NOT_FOUND",
		"show tables from no_such.main": "SCHEMA_NOT_FOUND",
	} {
		_, err := db.Query(sql)
		var te *trino.ErrTrino
		if !errors.As(err, &te) || te.ErrorName != want {
			t.Errorf("%s: error %v, want %s", sql, err, want)
		}
	}
	var user string
	if err := db.QueryRow("select current_user").Scan(&user); err != nil || user != "alice" {
		t.Errorf("current_user: %q, %v; want alice", user, err)
	}
}

// TestTrinoDivisionByZeroOnDuckDB: a Trino client's division or remainder by zero fails with
// Trino's DIVISION_BY_ZERO on the embedded DuckDB (DuckDB answers NULL); a NULL divisor is NULL.
func TestTrinoDivisionByZeroOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	for _, sql := range []string{"select 7 / 0", "select 7 % 0", "select x / (x - 1) from (values 1) t(x)", "select 7.5 / 0"} {
		var v any
		err := db.QueryRow(sql).Scan(&v)
		var te *trino.ErrTrino
		if !errors.As(err, &te) || te.ErrorName != "DIVISION_BY_ZERO" {
			t.Errorf("%s: %v, %v; want DIVISION_BY_ZERO", sql, v, err)
		}
	}
	for _, sql := range []string{"select 7 / nullif(0, 0)", "select 7.5 / cast(null as integer)"} {
		var v any
		if err := db.QueryRow(sql).Scan(&v); err != nil || v != nil {
			t.Errorf("%s: %v, %v; want NULL", sql, v, err)
		}
	}
}

// TestTrinoFloatingDivisionByZeroOnDuckDB: a double or a real divided by zero is Infinity,
// -Infinity or NaN as in Trino (Java's arithmetic: DoubleOperators.divide), whichever operand
// is the floating one, and a remainder by zero NaN; integers and decimals by zero still fail
// (TestTrinoDivisionByZeroOnDuckDB), and a NULL operand is NULL. trino-go-client reads the
// strings Trino sends for them into float64; the types are Trino's.
func TestTrinoFloatingDivisionByZeroOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const q = `select cast(x as double) / 0, -1e0 / 0, 0e0 / 0, x % 0e0, cast(x as real) / 0, 2 * x / 0e0 / 4,
		(x + 1) / double '0', x / 2 / 0e0, 7 / 2, 7.5 / 0e0, cast(null as integer) / 0, 1e0 / -0e0 from (values 3) t(x)`
	types, _ := columnTypes(t, ts.addr, q)
	wantTypes := "double|double|double|double|real|double|double|double|integer|double|integer|double"
	if strings.Join(types, "|") != wantTypes {
		t.Errorf("types %q, want %s", types, wantTypes)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var (
		f       [8]float64
		n       int64
		g       float64
		null    sql.NullInt64
		negZero float64
	)
	if err := db.QueryRow(q).Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &n, &g, &null, &negZero); err != nil {
		t.Fatal(err)
	}
	inf, nan := math.Inf(1), math.NaN()
	want := [8]float64{inf, -inf, nan, nan, inf, inf, inf, inf} // 3 / 2 is 1
	for i := range f {
		if f[i] != want[i] && !(math.IsNaN(f[i]) && math.IsNaN(want[i])) {
			t.Errorf("column %d: %v, want %v", i, f[i], want[i])
		}
	}
	if n != 3 || g != inf || null.Valid || negZero != -inf {
		t.Errorf("7 / 2 = %d, 7.5 / 0e0 = %v, NULL / 0 = %v, 1e0 / -0e0 = %v; want 3, +Inf, NULL, -Inf", n, g, null, negZero)
	}
}

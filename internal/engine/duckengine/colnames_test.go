package duckengine_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// namesVia returns the result column names the engine gives sqlText's client on protocol, from
// the run (Execute) and, for a prepared statement, from Describe.
func namesVia(t *testing.T, e query.Engine, protocol, sqlText string) (run, described []string) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.Execute(ctx, &query.Request{SQL: sqlText, Protocol: protocol})
	if err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	for _, f := range rows.Schema().Fields() {
		run = append(run, f.Name)
	}
	rows.Close()
	d, err := e.(engine.Describer).Describe(ctx, &query.Request{SQL: sqlText, Protocol: protocol})
	if err != nil {
		t.Fatalf("describe %s: %v", sqlText, err)
	}
	if d.Schema != nil {
		for _, f := range d.Schema.Fields() {
			described = append(described, f.Name)
		}
	}
	return run, described
}

// TestColumnNamesAsPostgreSQLNamesThem: every statement's result columns reach a PostgreSQL
// client named as PostgreSQL names them (the oracle: the same statement on the real server),
// where DuckDB would say count_star(), (40 + 2), CAST(1 AS VARCHAR), ...
func TestColumnNamesAsPostgreSQLNamesThem(t *testing.T) {
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)
	e := open(t)
	for _, stmt := range []string{
		"select 1", "select 40+2", "select count(*)", "select lower('A')", "select 'abc'", "select null",
		"select true", "select false", "select 't'::boolean", "select 1::text", "select cast(1 as int)", "select date '2020-01-01'",
		"select interval '1 day'", "select case when true then 1 end", "select case when true then 1 else 2 end",
		"select coalesce(null, 1)", "select nullif(1, 2)", "select greatest(1, 2)", "select exists(select 1)",
		"select (select 1 as inner_name)", "select (select count(*))", "select array[1, 2]",
		"select (array[1, 2])[1]", `select abs(-1) as "Mixed Case"`, "select 1 = 1", "select not true",
		"select 1 is null", "select current_date", "select row_number() over ()", "select 'a' || 'b'",
		"select 1 in (1, 2)", "select 1 between 0 and 2", "select -1", "select x, x + 1 from (select 1 as x) t",
		"select 1 as a union all select 2", "select cast(x as bigint) from (select 1 as x) t",
		"select upper(x), count(x), max(x) from (select 'a' as x) t group by x",
		"with w as (select 1 as k) select k, k * 2 from w", "select 40 + 2, '101'::bit", // bit: read as text (asText)
		"select 1, *, 2 + 2 from (select 1 as a, 2 as b) t", "select t.*, 1 from (select 1 as a) t",
		"select 'abc' ~ 'b', 'abc' !~* 'B', substring('ab12' from '[0-9]+'), to_date('2024-01-02', 'YYYY-MM-DD'), 7 / 2",
	} {
		prows, err := pg.Query(ctx, stmt)
		if err != nil {
			t.Fatalf("PostgreSQL %s: %v", stmt, err)
		}
		var want []string
		for _, f := range prows.FieldDescriptions() {
			want = append(want, f.Name)
		}
		prows.Close()
		run, described := namesVia(t, e, query.ProtocolPostgres, stmt)
		if strings.Join(run, "|") != strings.Join(want, "|") {
			t.Errorf("%s: columns %q, PostgreSQL names them %q", stmt, run, want)
		}
		if described != nil && strings.Join(described, "|") != strings.Join(want, "|") {
			t.Errorf("%s: described as %q, PostgreSQL names them %q", stmt, described, want)
		}
	}
}

// TestColumnNamesAsMySQLNamesThem: the same for a MySQL client, against MariaDB: an item with
// no alias is named as written.
func TestColumnNamesAsMySQLNamesThem(t *testing.T) {
	dsn, _ := mytest.NewDatabase(t)
	my, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	e := open(t)
	for _, stmt := range []string{
		"select 1", "select 40+2", "select count(*)", "select lower('A')", "select 'abc'", "select 'it''s'",
		"select 1 as a, 2 b", "select x, x + 1 from (select 1 as x) t", "select   1 +  1  ,2",
		"select distinct 3", "select concat('a', 'b') from (select 1) t where 1 = 1", "select length('abc'), 7 / 2, 7 DIV 2",
		"select 1 union select 2", "select -1", "select 1, t.*, 2+2 from (select 1 as a, 2 as b) t",
	} {
		rows, err := my.Query(stmt)
		if err != nil {
			t.Fatalf("MariaDB %s: %v", stmt, err)
		}
		want, err := rows.Columns()
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		run, _ := namesVia(t, e, query.ProtocolMySQL, stmt)
		if strings.Join(run, "|") != strings.Join(want, "|") {
			t.Errorf("%s: columns %q, MariaDB names them %q", stmt, run, want)
		}
	}
}

// TestColumnNamesAsTrinoNamesThem: a Trino client gets _colN for an item that is neither a
// column nor aliased, as Trino names it; Flight SQL clients keep DuckDB's names.
func TestColumnNamesAsTrinoNamesThem(t *testing.T) {
	e := open(t)
	const stmt = "select 1, 2 as b, x, x + 1 from (select 3 as x) t"
	if run, _ := namesVia(t, e, query.ProtocolTrino, stmt); strings.Join(run, "|") != "_col0|b|x|_col3" {
		t.Errorf("trino: %q", run)
	}
	if run, _ := namesVia(t, e, query.ProtocolFlightSQL, stmt); strings.Join(run, "|") != "1|b|x|(x + 1)" {
		t.Errorf("flightsql: %q, want DuckDB's own names", run)
	}
}

// BenchmarkColumnNames: what naming costs a small query: a PostgreSQL client's repeated
// statement (names cached) and unrepeated ones (a parse each, unless every item is a column or
// aliased), next to a Flight SQL client's (DuckDB's names, no parse).
//
//	go test -run '^$' -bench ColumnNames -benchmem -count 6 ./internal/engine/duckengine/
func BenchmarkColumnNames(b *testing.B) {
	e, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	run := func(b *testing.B, protocol string, sqlText func(i int) string) {
		for i := 0; i < b.N; i++ {
			rows, err := e.Execute(ctx, &query.Request{SQL: sqlText(i), Protocol: protocol})
			if err != nil {
				b.Fatal(err)
			}
			rows.Close()
		}
	}
	b.Run("flightsql", func(b *testing.B) {
		run(b, query.ProtocolFlightSQL, func(i int) string { return "select 40+2, count(*) from range(" + strconv.Itoa(i%1000) + ")" })
	})
	b.Run("postgres-repeated", func(b *testing.B) {
		run(b, query.ProtocolPostgres, func(int) string { return "select 40+2, count(*) from range(7)" })
	})
	b.Run("postgres-unrepeated", func(b *testing.B) {
		run(b, query.ProtocolPostgres, func(i int) string { return "select 40+2, count(*) from range(" + strconv.Itoa(i) + ")" })
	})
	// Columns and aliases only: named off the statement's text, without DuckDB's parse.
	b.Run("postgres-unrepeated-columns", func(b *testing.B) {
		run(b, query.ProtocolPostgres, func(i int) string {
			return "select r, r * 2 as twice from range(" + strconv.Itoa(i%1000) + ") t(r) where r > " + strconv.Itoa(i)
		})
	})
}

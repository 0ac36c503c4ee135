package querytest

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

const adminToken = "querytest-admin-token"

// embedded is a running embedded default and its addresses.
type embedded struct {
	pg, mysql, trino, flight, admin string
	pgPort, mysqlPort               string
}

func startEmbedded(t *testing.T) embedded {
	off := freeOffset(t)
	if off == 0 {
		t.Log("the documented ports are free: testing them (15432, 13306, 18080, 18815, 19000)")
	} else {
		t.Logf("the documented ports are busy: QUERYFLUX_PORT_OFFSET=%d", off)
	}
	addr := func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p+off) }
	e := embedded{pg: addr(15432), mysql: addr(13306), trino: addr(18080), flight: addr(18815), admin: addr(19000),
		pgPort: strconv.Itoa(15432 + off), mysqlPort: strconv.Itoa(13306 + off)}
	startDaemon(t, []string{"QUERYFLUX_PORT_OFFSET=" + strconv.Itoa(off), "QUERYFLUX_ADMIN_TOKEN=" + adminToken},
		[]string{e.pg, e.mysql, e.trino, e.flight, e.admin})
	return e
}

// TestEmbeddedDefault runs `queryflux serve` with no config and talks to it with every client.
func TestEmbeddedDefault(t *testing.T) {
	e := startEmbedded(t)
	clients := newClients(t, e)

	t.Run("psql", func(t *testing.T) {
		out := run(t, 20*time.Second, "psql", "-X", "-h", "127.0.0.1", "-p", e.pgPort, "-U", "queryflux", "demo", "-At", "-c", "select 40+2")
		if strings.TrimSpace(out) != "42" {
			t.Fatalf("psql select 40+2: %q", out)
		}
	})
	t.Run("mariadb", func(t *testing.T) {
		out := run(t, 20*time.Second, "mariadb", "-h", "127.0.0.1", "-P", e.mysqlPort, "-u", "queryflux", "-N", "-B", "-e", "select 40+2")
		if strings.TrimSpace(out) != "42" {
			t.Fatalf("mariadb select 40+2: %q", out)
		}
	})
	for _, name := range []string{"trino", "flightsql"} {
		t.Run(name, func(t *testing.T) {
			rows, err := clients[name]("select 40+2")
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || len(rows[0]) != 1 || rows[0][0] != "42" {
				t.Fatalf("%s select 40+2: %v", name, rows)
			}
		})
	}
	t.Run("crossProtocol", func(t *testing.T) { sameEverywhere(t, clients) })
	t.Run("duckColumnNames", func(t *testing.T) { duckColumnNames(t, e) })
	t.Run("adminQueries", func(t *testing.T) {
		// A query with a marker only this test sends, through psql.
		run(t, 20*time.Second, "psql", "-X", "-h", "127.0.0.1", "-p", e.pgPort, "-U", "queryflux", "demo", "-At", "-c", "select 7 as querytest_marker")
		daemontest.EventuallyNil(t, 20*time.Second, func() error {
			body := daemontest.Get(t, "http://"+e.admin+"/admin/queries", adminToken)
			if !strings.Contains(body, "querytest_marker") || !strings.Contains(body, `"protocol":"postgres"`) {
				return fmt.Errorf("/admin/queries does not show the psql query yet: %.500s", body)
			}
			return nil
		})
	})
	t.Run("metrics", func(t *testing.T) {
		body := daemontest.Get(t, "http://"+e.admin+"/metrics", "")
		if !strings.Contains(body, `queryflux_queries_total{cluster="demo",group="demo",status="succeeded"}`) {
			t.Fatalf("/metrics has no succeeded queries on demo:\n%.2000s", body)
		}
	})
}

// duckColumnNames: the embedded DuckDB's result columns reach each client named as its own
// database would name them (internal/engine/duckengine/colnames.go). Through the Trino port,
// trino-go-client reads _colN for an item that is neither a column nor aliased, as Trino names
// it, also in a statement with parameters (the client's EXECUTE ... USING); through the Flight
// SQL port, arrow-go's client keeps DuckDB's own names, in the FlightInfo's schema, the
// stream's, and a prepared statement's.
func duckColumnNames(t *testing.T, e embedded) {
	const stmt = "select 1, 2 as b, x, x + 1 from (select 3 as x) t"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + e.trino, Catalog: "demo"})
	for _, c := range []struct {
		sql  string
		args []any
		want string
	}{
		{stmt, nil, "_col0|b|x|_col3"},
		{"select cast(? as integer), x * ? as y, x from (select 3 as x) t", []any{5, 2}, "_col0|y|x"},
	} {
		rows, err := tr.QueryContext(ctx, c.sql, c.args...)
		if err != nil {
			t.Fatalf("trino-go-client: %s: %v", c.sql, err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if err != nil || strings.Join(cols, "|") != c.want {
			t.Errorf("trino-go-client: %s: columns %q (%v), want %s", c.sql, cols, err, c.want)
		}
	}

	const duckNames = "1|b|x|(x + 1)"
	fc := frontendtest.DialFlight(t, e.flight)
	names := func(s *arrow.Schema) string {
		var n []string
		for _, f := range s.Fields() {
			n = append(n, f.Name)
		}
		return strings.Join(n, "|")
	}
	info, err := fc.Execute(ctx, stmt)
	if err != nil {
		t.Fatalf("flightsql: %s: %v", stmt, err)
	}
	if s, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator); err != nil || names(s) != duckNames {
		t.Errorf("flightsql: FlightInfo schema %v (%v), want columns %s", s, err, duckNames)
	}
	r, err := fc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	got := names(r.Schema())
	for r.Next() {
	}
	r.Release()
	if got != duckNames {
		t.Errorf("flightsql: stream schema %s, want %s", got, duckNames)
	}
	prep, err := fc.Prepare(ctx, stmt)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if ds := prep.DatasetSchema(); ds == nil || names(ds) != duckNames {
		t.Errorf("flightsql: prepared statement's dataset schema %v, want columns %s", ds, duckNames)
	}
}

// client runs a query through one protocol and returns its rows as canonical strings.
type client func(q string) ([][]string, error)

func newClients(t *testing.T, e embedded) map[string]client {
	t.Helper()
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, "postgres://queryflux@"+e.pg+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close(context.Background()) })
	my, err := sql.Open("mysql", "queryflux@tcp("+e.mysql+")/demo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { my.Close() })
	tr := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + e.trino, Catalog: "demo"})
	fc := frontendtest.DialFlight(t, e.flight)
	return map[string]client{
		"postgres":  func(q string) ([][]string, error) { return pgRows(pg, q) },
		"mysql":     func(q string) ([][]string, error) { return sqlRows(my, q) },
		"trino":     func(q string) ([][]string, error) { return sqlRows(tr, q) },
		"flightsql": func(q string) ([][]string, error) { return flightRows(fc, q) },
	}
}

// pgRows uses the simple protocol: every value comes back as PostgreSQL's text.
func pgRows(c *pgx.Conn, q string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var row []string
		for _, raw := range rows.RawValues() {
			if raw == nil {
				row = append(row, canon(nil))
			} else {
				row = append(row, canon(string(raw)))
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func sqlRows(db *sql.DB, q string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := frontendtest.QueryAll(ctx, db, q)
	return frontendtest.MapCells(rows, canon), err
}

func flightRows(c *fsql.Client, q string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return frontendtest.FlightRows(ctx, c, q, func(col arrow.Array, i int) string {
		if col.IsNull(i) {
			return canon(nil)
		}
		return canon(col.ValueStr(i))
	})
}

// canon renders a value the same way whatever protocol delivered it: NULL, dates as
// YYYY-MM-DD, decimals without trailing zeros.
func canon(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return canon(string(x))
	case time.Time:
		return x.Format(time.DateOnly)
	case string:
		if _, err := strconv.ParseFloat(x, 64); err == nil && strings.Contains(x, ".") {
			return strings.TrimRight(strings.TrimRight(x, "0"), ".")
		}
		return x
	}
	return canon(fmt.Sprint(v))
}

// crossQueries are run through every protocol; each must give the same rows everywhere and,
// where given, the expected rows.
var crossQueries = []struct {
	sql  string
	want [][]string
}{
	{"select 40+2 as v", [][]string{{"42"}}},
	{"select count(*) as n from orders", [][]string{{"500"}}},
	{"select cast(sum(quantity) as bigint) as q from orders", nil},
	{"select count(*) as n from orders where status = 'shipped'", nil},
	{"select customer_id, name, country from customers order by customer_id limit 5", nil},
	{"select product_id, price from products where product_id in (3, 4) order by product_id", nil},
	{"select signup_date from customers where customer_id = 5", nil},
	{"select cast(null as integer) as n, 'x' as s", [][]string{{"NULL", "x"}}},
	{"select category, count(*) as n from products group by category order by category", nil},
}

func sameEverywhere(t *testing.T, clients map[string]client) {
	protocols := []string{"postgres", "mysql", "trino", "flightsql"}
	for _, q := range crossQueries {
		var ref [][]string
		for i, p := range protocols {
			rows, err := clients[p](q.sql)
			if err != nil {
				t.Errorf("%s: %s: %v", p, q.sql, err)
				continue
			}
			if len(rows) == 0 {
				t.Errorf("%s: %s: no rows", p, q.sql)
			}
			if i == 0 {
				ref = rows
				if q.want != nil && fmt.Sprint(rows) != fmt.Sprint(q.want) {
					t.Errorf("%s: %s: got %v, want %v", p, q.sql, rows, q.want)
				}
				continue
			}
			if fmt.Sprint(rows) != fmt.Sprint(ref) {
				t.Errorf("%s: %s:\n  postgres gave %v\n  %s gave %v", p, q.sql, ref, p, rows)
			}
		}
	}
}

package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// The same client scripts (testdata/clients) against the embedded DuckDB default: the demo
// dataset behind a real proxy core, in both pool modes. What DuckDB can do answers as on PostgreSQL (transactions,
// bytea, prepared statements, statement_timeout from the startup options, COPY with the client
// in text and CSV); what it cannot (cursors, LISTEN, DO blocks) is refused with an error, and
// nothing hangs.

func duckProxy(t *testing.T, mode string) pgclienttest.DSN {
	t.Helper()
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return pgclienttest.Proxy(t, e, mode, "demo")
}

// onDuckDB is what every script's shared cases answer on DuckDB: PostgreSQL's semantics, and
// a ROLLBACK TO (which DuckDB cannot do) failing the transaction with 0A000, the connection
// usable once the client has rolled it back.
var onDuckDB = map[string]string{
	"semantics": semanticsWant, "div_zero": "error 22012", "nested_tx": "error 0A000 error 25P02 0",
	"rollback": "0", "notice": "error 42601",
	"bytea": "0100ff", "notify": "error 0A000", "options": "1234ms", "long_session": longSession, "edges": edgesWant,
	// the session's own pg_stat_activity row; two writers of one row, the second waiting (PostgreSQL's answers)
	"activity": "true 1 true active client backend", "writers": "1 40",
}

func withCases(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range onDuckDB {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func TestClientPsycopgOnDuckDB(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := duckProxy(t, mode)
			for lib, extra := range map[string]map[string]string{
				"psycopg2": {"named_cursor": "31375", "with_hold": "55", "cursors": cursorsWant, "session_set": "error 0A000", "recover": "7",
					"copy_in": "(3, 2)", "copy_out": `'1\ta\n2\tb\n3\t\\N\n'`},
				"psycopg3": {"prepared": "21", "pipeline": "[1, 'two', 3]", "named_cursor": "31375", "cursors": cursorsWant, "cursor_hold": "3000 4501500", "names": pgNames, "rollback_prepared": "2",
					"copy_in": "(3, 2)", "copy_out": "[('1', 'a'), ('2', 'b'), ('3', None)]"},
			} {
				out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "cases.py", lib, d.Keywords(), "duckdb", "t_"+lib)
				if err != nil && !strings.Contains(out, "case ") {
					t.Fatalf("%s (make test-deps installs it): %v\n%s", lib, err, out)
				}
				if err != nil {
					t.Errorf("%s did not finish its cases: %v\n%s", lib, err, out)
				}
				pgclienttest.Expect(t, lib+" on DuckDB", out, withCases(extra))
			}
		})
	}
}

func TestClientNodePostgresOnDuckDB(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgclienttest.Dir(), "node_modules", "pg")); err != nil {
		t.Fatalf("node-postgres is not installed in %s (make test-deps runs npm ci there): %v", pgclienttest.Dir(), err)
	}
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := duckProxy(t, mode)
			out, err := pgclienttest.Command(t, time.Minute, nil, "node", "cases.js", d.URL(), "duckdb", "t_node")
			if err != nil {
				t.Fatalf("node cases.js: %v\n%s", err, out)
			}
			pgclienttest.Expect(t, "node-postgres on DuckDB", out, withCases(map[string]string{
				"copy_in": "3 2", "copy_out": `"1\ta\n2\tb\n3\t\\N\n"`, "copy_in_tx": "3",
				"prepared": "21", "error_recovers": "7", "names": pgNames}))
		})
	}
}

func TestClientJDBCOnDuckDB(t *testing.T) {
	classpath := pgclienttest.JDBCClasspath(t, "Cases.java")
	for i, mode := range poolModes {
		if !testlong.Sample(i, 2) {
			continue
		}
		t.Run(mode, func(t *testing.T) {
			d := duckProxy(t, mode)
			out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "Cases", d.JDBC(), "duckdb", "t_jdbc")
			if err != nil {
				t.Fatalf("java Cases: %v\n%s", err, out)
			}
			// fetch_size: setAutoCommit(false) and setFetchSize(100) read 5000 rows 100 at a time
			// (Execute with a row limit, PortalSuspended), another statement running in between.
			// metadata: getTypeInfo failed ("Referenced table pg_type not found": its query names
			// pg_type.oid, and the compatibility view was not named pg_type).
			pgclienttest.Expect(t, "JDBC on DuckDB", out, withCases(map[string]string{"prepared": "36", "fetch_size": "12502500", "names": pgNames,
				"copy_in": "3", "copy_out": `1|a;2|b;3|\N;`, "metadata": "int4 true, a int4;b text;"}))
		})
	}
}

// TestPGXSessionOnDuckDB: pgx runs the scripts' long session (cases.py's long_session) on one
// connection against DuckDB, and against PostgreSQL for comparison, each statement in the next
// of pgx's query modes (prepared and cached, described, simple protocol...), in both pool modes.
func TestPGXSessionOnDuckDB(t *testing.T) {
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, pool := range poolModes {
		for engine, proxy := range map[string]func(*testing.T, string) pgclienttest.DSN{"duckdb": duckProxy, "postgres": pgProxy} {
			t.Run(pool+"/"+engine, func(t *testing.T) {
				c := connect(t, proxy(t, pool).URL())
				ctx := context.Background()
				if _, err := c.Exec(ctx, "create table t_pgx_s (a int, b text)"); err != nil {
					t.Fatal(err)
				}
				rows, nulls := 0, 0
				for i := range 64 {
					sql, args, want := pgSessionStep(i, "t_pgx_s", rows, nulls)
					if got := pgxCells(ctx, c, sql, append([]any{modes[i%len(modes)]}, args...)); got != want {
						t.Errorf("step %d %q in mode %v: %s, want %s", i, sql, modes[i%len(modes)], got, want)
					}
					if i%8 == 4 || i%8 == 7 {
						rows++
					}
					if i%8 == 7 {
						nulls++
					}
				}
			})
		}
	}
}

// pgSessionStep is statement i of cases.py's long session in pgx's placeholders: its SQL,
// arguments and result as pgxCells writes it; rows and nulls count what the session inserted
// into table, and with b NULL.
func pgSessionStep(i int, table string, rows, nulls int) (string, []any, string) {
	series := func(n int, cell func(x int) string) string {
		var out []string
		for x := range n {
			out = append(out, cell(x))
		}
		return strings.Join(out, ";")
	}
	switch k := i%5 + 2; i % 8 {
	case 0:
		return fmt.Sprintf("select %d as n, 'row-%d' as s, null as z", i, i), nil, fmt.Sprintf("%d|row-%d|null", i, i)
	case 1:
		return "select $1::int + 1, $2::text, $3::text", []any{i, fmt.Sprint("p-", i), nil}, fmt.Sprintf("%d|p-%d|null", i+1, i)
	case 2:
		if i%16 == 10 {
			return fmt.Sprintf("select * from no_such_table_%d", i), nil, "error 42P01"
		}
		return fmt.Sprintf("selec %d", i), nil, "error 42601"
	case 3:
		return fmt.Sprintf("select x, x * x from generate_series(0, %d) as g(x) order by x", k-1), nil,
			series(k, func(x int) string { return fmt.Sprintf("%d|%d", x, x*x) })
	case 4:
		return fmt.Sprintf("insert into %s values (%d, 'v-%d')", table, i, i), nil, "1"
	case 5:
		return "select case when x = $1::int then null else x end from generate_series(0, 3) as g(x) order by g.x", []any{i % 4},
			series(4, func(x int) string {
				if x == i%4 {
					return "null"
				}
				return fmt.Sprint(x)
			})
	case 6:
		return fmt.Sprintf("select count(*), count(b) from %s", table), nil, fmt.Sprintf("%d|%d", rows, rows-nulls)
	default:
		return fmt.Sprintf("insert into %s values ($1::int, $2::text)", table), []any{1000 + i, nil}, "1"
	}
}

// pgxCells runs sql and writes its answer as the scripts' cells() do: the rows' values joined
// by | and ;, the rows a statement without columns affected, or "error" and the SQLSTATE.
func pgxCells(ctx context.Context, c *pgx.Conn, sql string, args []any) string {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return pgxError(err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return pgxError(err)
		}
		cells := make([]string, len(vals))
		for j, v := range vals {
			cells[j] = "null"
			if v != nil {
				cells[j] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(cells, "|"))
	}
	if err := rows.Err(); err != nil {
		return pgxError(err)
	}
	if len(rows.FieldDescriptions()) == 0 {
		return fmt.Sprint(rows.CommandTag().RowsAffected())
	}
	return strings.Join(out, ";")
}

func pgxError(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return "error " + pe.Code
	}
	return "error " + err.Error()
}

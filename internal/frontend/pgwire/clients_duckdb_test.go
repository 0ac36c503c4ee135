package pgwire_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
)

// The same client scripts (testdata/clients) against the embedded DuckDB default: the demo
// dataset behind a real proxy core, in both pool modes. What DuckDB can do answers as on PostgreSQL (transactions,
// bytea, prepared statements, statement_timeout from the startup options); what it cannot
// (COPY, cursors, LISTEN, DO blocks) is refused with an error, and nothing hangs.

func duckProxy(t *testing.T, mode string) pgclienttest.DSN {
	t.Helper()
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return pgclienttest.Proxy(t, e, mode, "demo")
}

// onDuckDB is what every script's shared cases answer on DuckDB.
var onDuckDB = map[string]string{
	"rollback": "0", "copy_in": "error 0A000", "copy_out": "error 0A000", "notice": "error 42601",
	"bytea": "0100ff", "notify": "error 0A000", "options": "1234ms",
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
				"psycopg2": {"named_cursor": "error 0A000", "with_hold": "error 0A000", "session_set": "error 0A000", "recover": "7"},
				"psycopg3": {"prepared": "21", "pipeline": "[1, 'two', 0]", "named_cursor": "error 0A000", "names": pgNames},
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
				"copy_in_tx": "error 0A000", "prepared": "21", "error_recovers": "7", "names": pgNames}))
		})
	}
}

func TestClientJDBCOnDuckDB(t *testing.T) {
	classpath := pgclienttest.JDBCClasspath(t, "Cases.java")
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := duckProxy(t, mode)
			out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "Cases", d.JDBC(), "duckdb", "t_jdbc")
			if err != nil {
				t.Fatalf("java Cases: %v\n%s", err, out)
			}
			// fetch_size: setAutoCommit(false) and setFetchSize(100) read 250 rows 100 at a time
			// (Execute with a row limit, PortalSuspended), another statement running in between.
			pgclienttest.Expect(t, "JDBC on DuckDB", out, withCases(map[string]string{"prepared": "36", "fetch_size": "31375", "names": pgNames}))
		})
	}
}

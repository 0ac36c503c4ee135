package pgwire_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/node/proxy"
)

// The client libraries people use, each running its script of cases (testdata/clients)
// against a real PostgreSQL behind the proxy, in both pool modes.

var poolModes = []string{proxy.PoolModeTransaction, proxy.PoolModeSession}

// inSession is want in session mode, and the transaction-mode refusal (0A000) otherwise.
func inSession(mode, want string) string {
	if mode == proxy.PoolModeSession {
		return want
	}
	return "error 0A000"
}

func pgProxy(t *testing.T, mode string) pgclienttest.DSN {
	e, _ := pgEngine(t)
	return pgclienttest.Proxy(t, e, mode, "demo")
}

// longSession is what every script's long_session case answers: its 64 statements each
// answered right.
const longSession = "ok 64"

// edgesWant is what every script's edges case answers: the text, 100,000 characters out and
// 200,000 in, 20,000 rows whose x sum to 199,990,000, 17 NULLs of 17 types, 100 parameters,
// 2 rows inserted by one query of three statements.
// semanticsWant is the scripts' semantics case as PostgreSQL answers it: 7/2, -7/2, ~, ~*, an
// anchored ~, two SIMILAR TOs, quote_ident of a keyword, to_char of a number.
const semanticsWant = `3 -3 true true false true false "select" 1,234.50`

const edgesWant = "uni=1 out=100000 in=200000 rows=20000,199990000 nulls=17 params=100 multi=2"

// pgNames are the columns of the scripts' names case (select count(*), 40 + 2, lower('A'),
// 1::text, max(a) as top) as PostgreSQL names them; DuckDB must name them the same.
const pgNames = "count ?column? lower text top"

// cursorsWant is what the scripts' cursors case answers on every engine: 5000 rows read 700 at
// a time with statements between, rows 1-3, 14, 51 and 49 more read forward, a missing cursor.
const cursorsWant = "5000/12502500 [1, 2, 3] 14 51 49 34000"

func TestClientPsycopg2(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "cases.py", "psycopg2", d.Keywords(), mode, "t_psycopg2")
			if err != nil && !strings.Contains(out, "case ") {
				t.Fatalf("psycopg2 (Debian python3-psycopg2; make test-deps): %v\n%s", err, out)
			}
			if err != nil {
				t.Errorf("psycopg2 did not finish its cases: %v\n%s", err, out)
			}
			pgclienttest.Expect(t, "psycopg2", out, map[string]string{
				"rollback": "0", "copy_in": "(3, 2)", "copy_out": `'1\ta\n2\tb\n3\t\\N\n'`,
				"notice": "NOTICE:  hello 42", "bytea": "0100ff", "named_cursor": "31375", "cursors": cursorsWant,
				"with_hold": inSession(mode, "55"), "session_set": inSession(mode, "pg_catalog, public"),
				"notify": inSession(mode, "ping"), "options": "1234ms", "recover": "7", "long_session": longSession, "edges": edgesWant,
				"semantics": semanticsWant, "div_zero": "error 22012", "nested_tx": "ok 1 2",
			})
		})
	}
}

func TestClientPsycopg3(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "cases.py", "psycopg3", d.Keywords(), mode, "t_psycopg3")
			if err != nil && !strings.Contains(out, "case ") {
				t.Fatalf("psycopg 3 (Debian python3-psycopg; make test-deps): %v\n%s", err, out)
			}
			if err != nil {
				t.Errorf("psycopg 3 did not finish its cases: %v\n%s", err, out)
			}
			pgclienttest.Expect(t, "psycopg3", out, map[string]string{
				"rollback": "0", "copy_in": "(3, 2)", "copy_out": "[('1', 'a'), ('2', 'b'), ('3', None)]",
				"notice": "hello 42", "bytea": "0100ff", "prepared": "21", "pipeline": "[1, 'two', 3]",
				"named_cursor": "31375", "cursors": cursorsWant, "cursor_hold": inSession(mode, "3000 4501500"),
				"notify": inSession(mode, "ping"), "options": "1234ms", "names": pgNames,
				"rollback_prepared": "2", "long_session": longSession, "edges": edgesWant,
				"semantics": semanticsWant, "div_zero": "error 22012", "nested_tx": "ok 1 2",
			})
		})
	}
}

func TestClientNodePostgres(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgclienttest.Dir(), "node_modules", "pg")); err != nil {
		t.Fatalf("node-postgres is not installed in %s (make test-deps runs npm ci there): %v", pgclienttest.Dir(), err)
	}
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			out, err := pgclienttest.Command(t, time.Minute, nil, "node", "cases.js", d.URL(), mode, "t_node")
			if err != nil {
				t.Fatalf("node cases.js: %v\n%s", err, out)
			}
			pgclienttest.Expect(t, "node-postgres", out, map[string]string{
				"rollback": "0", "copy_in": "3 2", "copy_out": `"1\ta\n2\tb\n3\t\\N\n"`, "copy_in_tx": "3",
				"notice": "hello 42", "bytea": "0100ff", "prepared": "21",
				"notify": inSession(mode, "ping"), "options": "1234ms", "error_recovers": "7", "names": pgNames,
				"long_session": longSession, "edges": edgesWant,
				"semantics": semanticsWant, "div_zero": "error 22012", "nested_tx": "ok 1 2",
			})
		})
	}
}

// TestClientJDBC compiles the JDBC cases once and runs them in one JVM per pool mode.
func TestClientJDBC(t *testing.T) {
	classpath := pgclienttest.JDBCClasspath(t, "Cases.java")
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "Cases", d.JDBC(), mode, "t_jdbc")
			if err != nil {
				t.Fatalf("java Cases: %v\n%s", err, out)
			}
			pgclienttest.Expect(t, "JDBC", out, map[string]string{
				"rollback": "0", "copy_in": "3", "copy_out": `1|a;2|b;3|\N;`, "notice": "hello 42",
				"fetch_size": "12502500", "bytea": "0100ff", "prepared": "36", "batch": "3 3", "metadata": "int4 true, a int4;b text;",
				"notify": inSession(mode, "ping"), "options": "1234ms", "names": pgNames, "long_session": longSession, "edges": edgesWant,
				"semantics": semanticsWant, "div_zero": "error 22012", "nested_tx": "ok 1 2",
			})
		})
	}
}

// TestClientPsql: transactions across -c commands, \copy both ways, notices, in both modes.
func TestClientPsql(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			data := filepath.Join(t.TempDir(), "in.tsv")
			if err := os.WriteFile(data, []byte("1\tone\n2\ttwo\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			psql := func(args ...string) string {
				base := []string{"-X", "-h", d.Host, "-p", d.PortString(), "-U", d.User, "-d", d.Database, "-At", "-v", "ON_ERROR_STOP=1"}
				out, err := pgclienttest.Command(t, time.Minute, nil, "psql", append(base, args...)...)
				if err != nil {
					t.Fatalf("psql %q: %v\n%s", args, err, out)
				}
				return out
			}
			if out := psql("-c", "begin", "-c", "select 1", "-c", "commit"); out != "BEGIN\n1\nCOMMIT\n" {
				t.Fatalf("begin/select/commit printed %q", out)
			}
			psql("-c", "create table copied (a int, b text)")
			psql("-c", `\copy copied from '`+data+`'`)
			if out := psql("-c", `\copy (select * from copied order by a) to stdout`); out != "1\tone\n2\ttwo\n" {
				t.Fatalf("\\copy to stdout printed %q", out)
			}
			if out := psql("-c", "begin", "-c", `\copy copied from '`+data+`'`, "-c", "rollback", "-c", "select count(*) from copied"); !strings.HasSuffix(out, "2\n") {
				t.Fatalf("\\copy inside a rolled back transaction: %q", out)
			}
			if out := psql("-c", "do $$ begin raise notice 'hello %', 42; end $$"); !strings.Contains(out, "NOTICE:  hello 42") {
				t.Fatalf("the notice did not reach psql: %q", out)
			}
		})
	}
}

// TestClientPgbench: pgbench -i with its default steps (COPY included) through the proxy, then
// select-only runs in prepared and extended protocol, in both modes.
func TestClientPgbench(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			conn := []string{"-h", d.Host, "-p", d.PortString(), "-U", d.User}
			if out, err := pgclienttest.Command(t, 2*time.Minute, nil, "pgbench", append(append([]string{"-i", "-s", "1"}, conn...), d.Database)...); err != nil {
				t.Fatalf("pgbench -i: %v\n%s", err, out)
			}
			for _, m := range []string{"prepared", "extended", "simple"} {
				args := append(append([]string{"-S", "-M", m, "-c", "2", "-t", "100", "-n"}, conn...), d.Database)
				out, err := pgclienttest.Command(t, 2*time.Minute, nil, "pgbench", args...)
				if err != nil || !strings.Contains(out, "number of transactions actually processed: 200/200") {
					t.Fatalf("pgbench -S -M %s: %v\n%s", m, err, out)
				}
			}
		})
	}
}

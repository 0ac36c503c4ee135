package mysqlwire

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// duckLikeMariaDB runs the Python script testdata/<script> (its arguments: lead, then host,
// port, user and database) against MariaDB itself and through the proxy on the embedded
// DuckDB, and fails t when the two print other lines.
func duckLikeMariaDB(t *testing.T, python, script string, lead ...string) {
	t.Helper()
	run := func(addr, user, db string) string {
		t.Helper()
		host, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command(python, append(append([]string{"testdata/" + script}, lead...), host, port, user, db)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s against %s: %v\n%s", script, addr, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	dsn, direct := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := run(cfg.Addr, cfg.User, direct)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	duck := serveCore(t, "duck", eng, coreSetup{})
	if got := run(duck.addr, testUser, "duck"); got != want {
		t.Errorf("%s on DuckDB:\n%s\nMariaDB itself:\n%s", script, got, want)
	}
}

// TestPythonExecutemanyLikeMariaDB: PyMySQL's and mysqlclient's executemany of rows holding
// bytes (some not UTF-8), decimals, dates, datetimes and None, and the reads by a parameter of
// each kind, get through the proxy on the embedded DuckDB what they get from MariaDB itself.
// Before: both clients write a bytes parameter as a plain '...' string of its bytes, which
// DuckDB refused when they were not UTF-8 ("Invalid unicode"), so the whole executemany failed.
func TestPythonExecutemanyLikeMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			duckLikeMariaDB(t, frontendtest.PythonWith(t, c.module), "python_executemany.py", c.lib)
		})
	}
}

// TestPythonUpsertLikeMariaDB: PyMySQL's INSERT ... ON DUPLICATE KEY UPDATE (VALUES(col), the
// row's own columns, quoted names, parameters), REPLACE [INTO], with explicit ids, and the
// AUTO_INCREMENT id after them leave on the embedded DuckDB the rows MariaDB leaves. Before:
// DuckDB refused both statements (syntax error).
func TestPythonUpsertLikeMariaDB(t *testing.T) {
	duckLikeMariaDB(t, frontendtest.PythonWith(t, "pymysql"), "python_upsert.py")
}

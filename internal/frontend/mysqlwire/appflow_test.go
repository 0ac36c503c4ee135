package mysqlwire

import (
	"net"
	"os/exec"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestPythonAppFlowOnDuckDBAsMariaDB: an application's day through PyMySQL and mysqlclient
// (testdata/appflow.py: AUTO_INCREMENT ids, an upsert and a REPLACE on a table with a primary
// key and a unique name, LAST_INSERT_ID(), transactions, aggregates, GROUP_CONCAT ...
// SEPARATOR, DATE_FORMAT, DATEDIFF, LIKE, CAST AS SIGNED) prints through the proxy on the
// embedded DuckDB what it prints on MariaDB.
func TestPythonAppFlowOnDuckDBAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := appFlow(t, python, c.lib, cfg.Addr, cfg.User, cfg.Passwd, name)
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			got := appFlow(t, python, c.lib, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck")
			if got != want {
				t.Errorf("on DuckDB:\n%s\non MariaDB:\n%s", got, want)
			}
		})
	}
}

// appFlow runs testdata/appflow.py with lib against the server at addr and returns what it
// printed.
func appFlow(t *testing.T, python, lib, addr, user, password, db string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(python, "testdata/appflow.py", lib, host, port, user, password, db).CombinedOutput()
	if err != nil {
		t.Fatalf("appflow.py with %s against %s: %v\n%s", lib, addr, err, out)
	}
	return string(out)
}

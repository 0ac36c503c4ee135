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

// TestPythonExecutemanyLikeMariaDB: PyMySQL's and mysqlclient's executemany of rows holding
// bytes (some not UTF-8), decimals, dates, datetimes and None, and the reads by a parameter of
// each kind, get through the proxy on the embedded DuckDB what they get from MariaDB itself.
// Before: both clients write a bytes parameter as a plain '...' string of its bytes, which
// DuckDB refused when they were not UTF-8 ("Invalid unicode"), so the whole executemany failed.
func TestPythonExecutemanyLikeMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			py := frontendtest.PythonWith(t, c.module)
			run := func(addr, user, db string) string {
				t.Helper()
				host, port, _ := net.SplitHostPort(addr)
				out, err := exec.Command(py, "testdata/python_executemany.py", c.lib, host, port, user, db).CombinedOutput()
				if err != nil {
					t.Fatalf("python_executemany.py against %s: %v\n%s", addr, err, out)
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
				t.Errorf("on DuckDB:\n%s\nMariaDB itself:\n%s", got, want)
			}
		})
	}
}

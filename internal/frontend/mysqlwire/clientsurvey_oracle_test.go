package mysqlwire

import (
	"net"
	"os/exec"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestClientSurveyAsMariaDB: PyMySQL's and mysqlclient's common flows (testdata/clientsurvey.py:
// executemany, lastrowid, cursor.description with null_ok, multi-statements and nextset, a
// server-side cursor, the errors of a duplicate key, a syntax error, a missing table and a
// LOAD DATA LOCAL refused to PyMySQL (local_infile off), the connection serving on, the character set and time zone
// variables) print through the proxy what they print on MariaDB: relayed to MariaDB, and on
// DuckDB.
func TestClientSurveyAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			maria := coreServer(t, coreSetup{})
			cfg, err := gomysql.ParseDSN(maria.dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := surveyOf(t, python, c.lib, cfg.Addr, cfg.User, cfg.Passwd, maria.dbName)
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			sameLines(t, "relayed to MariaDB", surveyOf(t, python, c.lib, maria.addr, testUser, "", maria.dbName), want)
			sameLines(t, "on DuckDB", surveyOf(t, python, c.lib, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck"), want)
		})
	}
}

// surveyOf runs testdata/clientsurvey.py with lib against the server at addr.
func surveyOf(t *testing.T, python, lib, addr, user, password, db string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(python, "testdata/clientsurvey.py", lib, host, port, user, password, db).CombinedOutput()
	if err != nil {
		t.Fatalf("clientsurvey.py with %s against %s: %v\n%s", lib, addr, err, out)
	}
	return string(out)
}

package mysqlwire

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestPythonAppFlowOnDuckDBAsMariaDB: an application's day through PyMySQL and mysqlclient
// (testdata/appflow.py: AUTO_INCREMENT ids, an upsert and a REPLACE on a table with a primary
// key and a unique name, LAST_INSERT_ID(), transactions, aggregates, GROUP_CONCAT ...
// SEPARATOR, DATE_FORMAT, DATEDIFF, LIKE, CAST AS SIGNED; exact /, CONCAT with a NULL, LENGTH
// in bytes, <=>; functions of a date's text, FIELD, ELT, INSERT, CONV) prints through the proxy
// on the embedded DuckDB what it prints on MariaDB.
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

// TestMySQL2AppFlowOnDuckDBAsMariaDB: an application's day through node mysql2
// (frontendtest/nodeclients/mysql2_appflow.js: JSON columns read as objects, an UPDATE's
// affectedRows and changedRows with and without CLIENT_FOUND_ROWS, TRUNCATE and the ids after
// it, a type matrix written by parameters and read by text and prepared statements (a DATETIME
// without fractional digits), the errors of a duplicate key, a syntax error and a missing
// table, exact /, CONCAT with a NULL, LENGTH in bytes, <=>, functions of a date's text, FIELD,
// ELT, INSERT, CONV) prints through the proxy on the embedded DuckDB what it prints on MariaDB.
func TestMySQL2AppFlowOnDuckDBAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := mysql2AppFlow(t, cfg.Addr, cfg.User, cfg.Passwd, name)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	sameLines(t, "on DuckDB", mysql2AppFlow(t, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck"), want)
}

// sameLines reports each line of got that differs from want's.
func sameLines(t *testing.T, where, got, want string) {
	t.Helper()
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("%s:\n%s\non MariaDB:\n%s", where, got, want)
	}
	for i := range wantLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("%s: %s\n on MariaDB: %s", where, gotLines[i], wantLines[i])
		}
	}
}

// mysql2AppFlow runs mysql2_appflow.js against the server at addr and returns what it printed.
func mysql2AppFlow(t *testing.T, addr, user, password, db string) string {
	t.Helper()
	return runClientScript(t, "node", frontendtest.NodeClients(t, "mysql2"), []string{"mysql2_appflow.js"}, addr, user, password, db)
}

// runClientScript runs a client library's script (prog args, in dir) against the server at addr,
// named to it also by MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD and MYSQL_DB, and
// returns what it printed.
func runClientScript(t *testing.T, prog, dir string, args []string, addr, user, password, db string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MYSQL_HOST="+host, "MYSQL_PORT="+port, "MYSQL_USER="+user, "MYSQL_PASSWORD="+password, "MYSQL_DB="+db)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s against %s: %v\n%s\n%s", args[0], addr, err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

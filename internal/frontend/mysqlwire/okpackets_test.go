package mysqlwire

import (
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/mytest"
)

// TestMySQL2OKPacketsAsMariaDB: what mysql2 reads of the OK packets of INSERT, UPDATE,
// DELETE, REPLACE, an upsert and CALL (affectedRows, insertId, info and the changedRows read
// there, warningStatus, serverStatus), and of stacked statements' and stored procedures'
// result sets, by text and prepared statement, in and out of a transaction, is what it reads
// from MariaDB itself: on the relay and with settings.passthrough: false.
func TestMySQL2OKPacketsAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	direct := runMySQL2Script(t, "mysql2_okpackets.js", cfg.Addr, cfg.User, cfg.Passwd, name)
	for _, passthrough := range []bool{true, false} {
		f := coreServer(t, coreSetup{noPassthrough: !passthrough})
		proxied := runMySQL2Script(t, "mysql2_okpackets.js", f.addr, testUser, "", f.dbName)
		for probe, want := range direct {
			// An error names the database: each side has its own.
			if got, want := strings.ReplaceAll(proxied[probe], f.dbName, "db"), strings.ReplaceAll(want, name, "db"); got != want {
				t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", passthrough, probe, got, want)
			}
		}
		if len(proxied) != len(direct) || len(direct) < 50 {
			t.Errorf("passthrough %v: %d probes through the proxy, %d direct", passthrough, len(proxied), len(direct))
		}
	}
}

// TestMultiResultsAsTheClients: a client without CLIENT_MULTI_RESULTS and
// CLIENT_PS_MULTI_RESULTS (mysql2 told so) gets MariaDB's own answer through the proxy: a CALL
// of a procedure that selects refused (1312), one that does not run, by text and prepared.
func TestMultiResultsAsTheClients(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	direct := runMySQL2Script(t, "mysql2_okpackets.js", cfg.Addr, cfg.User, cfg.Passwd, name, "WITHOUT_MULTI_RESULTS=1")
	if !strings.Contains(direct["text call"], "1312") {
		t.Fatalf("MariaDB ran the CALL for a client without CLIENT_MULTI_RESULTS: %s", direct["text call"])
	}
	for _, passthrough := range []bool{true, false} {
		f := coreServer(t, coreSetup{noPassthrough: !passthrough})
		proxied := runMySQL2Script(t, "mysql2_okpackets.js", f.addr, testUser, "", f.dbName, "WITHOUT_MULTI_RESULTS=1")
		for probe, want := range direct {
			if got, want := strings.ReplaceAll(proxied[probe], f.dbName, "db"), strings.ReplaceAll(want, name, "db"); got != want {
				t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", passthrough, probe, got, want)
			}
		}
	}
}

// TestPythonCallprocAsMariaDB: PyMySQL's and mysqlclient's callproc (SET @_name_n, CALL, SELECT
// of the OUT values) and CALL's result sets (nextset), with autocommit off (their default: the
// statements run in a pinned transaction, where the user variables live) and on, see through
// the proxy what they see from MariaDB, but where the proxy says why it cannot: user variables
// outside a transaction, and several result sets inside one.
func TestPythonCallprocAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			direct := runPythonScript(t, python, "testdata/python_callproc.py", c.lib, cfg.Addr, cfg.User, cfg.Passwd, name)
			f := coreServer(t, coreSetup{})
			proxied := runPythonScript(t, python, "testdata/python_callproc.py", c.lib, f.addr, testUser, "", f.dbName)
			for probe, want := range direct {
				if got := proxied[probe]; got != want {
					t.Errorf("%s:\n proxy  %s\n direct %s", probe, got, want)
				}
			}
		})
	}
}

// runPythonScript runs a python probe script with lib against addr (and the script's further
// arguments); one JSON line per probe.
func runPythonScript(t *testing.T, python, script, lib, addr, user, password, db string, more ...string) map[string]string {
	t.Helper()
	return pythonProbes(t, python, script, lib, addr, user, password, db, more, nil)
}

// pythonProbes runs a python probe script (its arguments lib, host, port, user, password, db,
// then more) with env added to its environment, and reads its JSON lines, one per probe, by
// the probe's name.
func pythonProbes(t *testing.T, python, script, lib, addr, user, password, db string, more, env []string) map[string]string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(python, append([]string{script, lib, host, port, user, password, db}, more...)...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s against %s: %v\n%s", lib, script, addr, err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var p struct {
			Probe string `json:"probe"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%s output %q: %v", lib, line, err)
		}
		got[p.Probe] = line
	}
	return got
}

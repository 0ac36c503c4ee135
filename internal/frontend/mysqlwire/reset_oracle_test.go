package mysqlwire

import (
	"database/sql"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// otherMariaDBUser creates on the test server a user that may use db, with testPassword, for
// a COM_CHANGE_USER to change to; it is dropped when t ends.
func otherMariaDBUser(t *testing.T, db string) string {
	t.Helper()
	admin, err := sql.Open("mysql", mytest.ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	user := pgtest.NewName("qf_cu_")
	for _, s := range []string{
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + testPassword + "'",
		"GRANT ALL ON " + db + ".* TO '" + user + "'@'%'",
	} {
		if _, err := admin.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP USER '" + user + "'@'%'"); err != nil {
			t.Errorf("drop user %s: %v", user, err)
		}
	})
	return user
}

// sameUsers writes the names each side logged in with as the same words, so that the probes
// of MariaDB and of the proxy compare.
func sameUsers(s string, names map[string]string) string {
	for from, to := range names {
		s = strings.ReplaceAll(s, "'"+from+"'", "'"+to+"'")
	}
	return s
}

// TestPythonWarningsAndChangeUserAsMariaDB: PyMySQL and mysqlclient see through the proxy, on
// the relay and with settings.passthrough: false, what they see from MariaDB: SHOW WARNINGS
// after INSERT IGNORE, UPDATE IGNORE and a SELECT with warnings, with autocommit off (a
// transaction: the Arrow path on its pinned connection) and on; and mysqlclient's change_user
// (COM_CHANGE_USER): to another login with its password, the session reset (a user variable,
// an open transaction), a wrong password refused with 1045 and the session reset all the
// same, and back.
func TestPythonWarningsAndChangeUserAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			other := otherMariaDBUser(t, name)
			direct := runPythonScript(t, python, "testdata/python_reset.py", c.lib, cfg.Addr, cfg.User, cfg.Passwd, name, other, testPassword)
			if len(direct) < 11 {
				t.Fatalf("%d probes direct", len(direct))
			}
			for _, passthrough := range []bool{true, false} {
				f := coreServer(t, coreSetup{noPassthrough: !passthrough})
				proxied := runPythonScript(t, python, "testdata/python_reset.py", c.lib, f.addr, testUser, "", f.dbName, "alice", testPassword)
				for probe, want := range direct {
					got := sameUsers(strings.ReplaceAll(proxied[probe], f.dbName, "db"), map[string]string{"alice": "other", testUser: "me"})
					want = sameUsers(strings.ReplaceAll(want, name, "db"), map[string]string{other: "other", cfg.User: "me"})
					if got != want {
						t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", passthrough, probe, got, want)
					}
				}
				if len(proxied) != len(direct) {
					t.Errorf("passthrough %v: %d probes through the proxy, %d direct", passthrough, len(proxied), len(direct))
				}
			}
		})
	}
}

// TestMySQL2ChangeUserAsMariaDB: mysql2's changeUser (COM_CHANGE_USER, which mysql2 answers
// an AuthSwitchRequest for) does through the proxy what it does on MariaDB: the new login in,
// its user variables, temporary tables gone, prepared statements prepared again; a wrong
// password refused with 1045, the connection still serving.
func TestMySQL2ChangeUserAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	other := otherMariaDBUser(t, name)
	direct := runMySQL2Script(t, "mysql2_part3.js", cfg.Addr, cfg.User, cfg.Passwd, name, "PROBES=changeuser", "CHANGE_USER="+other, "CHANGE_PASSWORD="+testPassword)
	if !strings.Contains(direct["change user"], "ok") {
		t.Fatalf("MariaDB refused the change: %s", direct["change user"])
	}
	for _, passthrough := range []bool{true, false} {
		f := coreServer(t, coreSetup{noPassthrough: !passthrough})
		proxied := runMySQL2Script(t, "mysql2_part3.js", f.addr, testUser, "", f.dbName, "PROBES=changeuser", "CHANGE_USER=alice", "CHANGE_PASSWORD="+testPassword)
		for probe, want := range direct {
			got := sameUsers(strings.ReplaceAll(proxied[probe], f.dbName, "db"), map[string]string{"alice": "other"})
			want = sameUsers(strings.ReplaceAll(want, name, "db"), map[string]string{other: "other"})
			if got != want {
				t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", passthrough, probe, got, want)
			}
		}
		if len(proxied) != len(direct) {
			t.Errorf("passthrough %v: %d probes through the proxy, %d direct", passthrough, len(proxied), len(direct))
		}
	}
}

package mysqlwire

import (
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

// warningStory is what two clients of one server run to show whose warnings are whose: setup
// (on a), then a statement on a and another on b that each warn or fail differently.
type warningStory struct{ setup, a, b string }

// target is a MySQL-protocol server and the login the clients use.
type target struct{ addr, user, password, db string }

// steps maps each step of a probe script to its outcome (readProbes).
type steps = map[string]string

func warningsMySQL2(t *testing.T, at target, s warningStory) steps {
	t.Helper()
	dir := frontendtest.NodeClients(t, "mysql2")
	host, port, _ := net.SplitHostPort(at.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "mysql2_warnings.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MYSQL_HOST="+host, "MYSQL_PORT="+port, "MYSQL_USER="+at.user,
		"MYSQL_PASSWORD="+at.password, "MYSQL_DB="+at.db, "SETUP="+s.setup, "A_SQL="+s.a, "B_SQL="+s.b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mysql2 against %s: %v\n%s", at.addr, err, out)
	}
	return readProbes(t, out)
}

func warningsPython(lib, module string) func(*testing.T, target, warningStory) steps {
	return func(t *testing.T, at target, s warningStory) steps {
		t.Helper()
		python := frontendtest.PythonWith(t, module)
		host, port, _ := net.SplitHostPort(at.addr)
		out, err := exec.Command(python, "testdata/warnings_probe.py", lib, host, port, at.user, at.password, at.db, s.setup, s.a, s.b).Output()
		if err != nil {
			t.Fatalf("%s against %s: %v\n%s", lib, at.addr, err, out)
		}
		return readProbes(t, out)
	}
}

// warningsCLI runs the whole story in one mariadb CLI session with --show-warnings, which
// prints SHOW WARNINGS after each statement whose OK packet counts warnings; it returns the
// output.
func warningsCLI(t *testing.T, at target, s warningStory) steps {
	t.Helper()
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb CLI not installed")
	}
	host, port, _ := net.SplitHostPort(at.addr)
	script := s.a + "; " + s.b
	if s.setup != "" {
		script = s.setup + "; " + script
	}
	args := []string{"-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", at.user, "--show-warnings", "-e", script}
	if at.password != "" {
		args = append(args, "-p"+at.password)
	}
	if at.db != "" {
		args = append(args, at.db)
	}
	out, _ := exec.Command(cli, args...).CombinedOutput()
	return steps{"cli": string(out)}
}

var warningClients = []struct {
	name string
	run  func(*testing.T, target, warningStory) steps
}{
	{"mysql2", warningsMySQL2},
	{"pymysql", warningsPython("pymysql", "pymysql")},
	{"mysqlclient", warningsPython("mysqldb", "MySQLdb")},
	{"mariadb-cli", warningsCLI},
}

// TestWarningsPerClientAsMariaDB: through the proxy to MariaDB, two clients of the same pool
// each see their own warnings — warning_count in the OK packet, @@warning_count, SHOW WARNINGS
// (text and after a prepared statement), the mariadb CLI's --show-warnings — exactly as two
// clients of MariaDB itself do, never the other client's.
func TestWarningsPerClientAsMariaDB(t *testing.T) {
	story := warningStory{
		setup: "create table w (id int primary key, s varchar(5), n int)",
		a:     "insert ignore into w (id, s) values (1, 'far too long')",
		b:     "insert ignore into w (id, n) values (2, 'abc')",
	}
	for _, c := range warningClients {
		t.Run(c.name, func(t *testing.T) {
			f := coreServer(t, coreSetup{})
			proxied := c.run(t, target{f.addr, testUser, "", f.dbName}, story)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			direct := c.run(t, target{cfg.Addr, cfg.User, cfg.Passwd, name}, story)
			sameDB := strings.NewReplacer(f.dbName, "DB", name, "DB") // messages name the database
			for step := range proxied {
				proxied[step] = sameDB.Replace(proxied[step])
			}
			for step := range direct {
				direct[step] = sameDB.Replace(direct[step])
			}
			// The direct run proves the story warns: a's 1265, b's 1366, each its own.
			for _, frag := range []string{"1265", "1366"} {
				if !strings.Contains(strings.Join(mapValues(direct), " "), frag) {
					t.Fatalf("MariaDB itself gave no warning %s: %v", frag, direct)
				}
			}
			if len(proxied) != len(direct) {
				t.Errorf("proxy answered %d steps, MariaDB %d:\n proxy  %v\n direct %v", len(proxied), len(direct), proxied, direct)
			}
			for step, want := range direct {
				if got := proxied[step]; got != want {
					t.Errorf("%s:\n proxy  %s\n direct %s", step, got, want)
				}
			}
		})
	}
}

// TestWarningsPerClientOnDuckDB: on the embedded engine (DuckDB, which raises no warnings of its
// own) a statement's error is its client's diagnostic: SHOW WARNINGS and @@warning_count show it
// to that client only, never to another client of the same pool.
func TestWarningsPerClientOnDuckDB(t *testing.T) {
	story := warningStory{a: "select * from no_such_table", b: "selec 1"}
	for _, c := range warningClients {
		t.Run(c.name, func(t *testing.T) {
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			f := serveCore(t, "duck", eng, coreSetup{})
			got := c.run(t, target{f.addr, testUser, "", ""}, story)
			if c.name == "mariadb-cli" {
				if out := got["cli"]; !strings.Contains(out, "ERROR 1146 (42S02)") || strings.Contains(out, "Warning") {
					t.Fatalf("mariadb --show-warnings: %q", out)
				}
				return
			}
			expect := func(step string, want, notWant []string) {
				for _, w := range want {
					if !strings.Contains(got[step], w) {
						t.Errorf("%s: %s, want %s in it", step, got[step], w)
					}
				}
				for _, w := range notWant {
					if strings.Contains(got[step], w) {
						t.Errorf("%s: %s, want no %s in it", step, got[step], w)
					}
				}
			}
			expect("a runs", []string{"error 1146"}, nil)
			expect("a warning_count", []string{"1"}, nil)
			expect("b sees none", []string{"[]"}, []string{"1146"})
			expect("b warning_count", []string{"0"}, nil)
			expect("b runs", []string{"error 1064"}, nil)
			expect("a sees its own", []string{`"Error"`, "1146", "no_such_table"}, []string{"1064"})
			expect("b sees its own", []string{`"Error"`, "1064"}, []string{"1146"})
			if c.name == "mysql2" {
				expect("b prepared", []string{"error 1064"}, nil)
				expect("a still its own", []string{"1146"}, []string{"1064"})
			}
		})
	}
}

func mapValues(s steps) []string {
	var out []string
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

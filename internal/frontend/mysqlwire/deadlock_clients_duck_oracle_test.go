package mysqlwire

import (
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestCommitRefusedAsDeadlockThroughClientsOnDuckDB: a writer's COMMIT the embedded DuckDB
// refuses (1213: a refused statement it could not undo alone) reaches PyMySQL, mysqlclient
// and node mysql2 as MariaDB's deadlock reaches them: the same error class, number, SQLSTATE
// and text, mysql2's error not fatal, the connection going on out of a transaction, nothing of
// the transaction left, and the next transaction committing. MariaDB's side is a real InnoDB
// deadlock between two clients (its 1213 comes at a statement, never at COMMIT).
func TestCommitRefusedAsDeadlockThroughClientsOnDuckDB(t *testing.T) {
	clients := []struct {
		name string
		run  func(t *testing.T, how, addr, user, password, db string) string
	}{
		{"mysql2", func(t *testing.T, how, addr, user, password, db string) string {
			return runClientScript(t, "node", frontendtest.NodeClients(t, "mysql2"), []string{"mysql2_deadlock.js", how}, addr, user, password, db)
		}},
		{"pymysql", pythonDeadlock("pymysql", "pymysql")},
		{"mysqlclient", pythonDeadlock("mysqldb", "MySQLdb")},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := c.run(t, "deadlock", cfg.Addr, cfg.User, cfg.Passwd, name)
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			got := c.run(t, "commit", serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck")
			if !strings.Contains(want, "1213") {
				t.Fatalf("MariaDB gave no deadlock:\n%s", want)
			}
			var lines []string
			for _, line := range strings.Split(got, "\n") {
				if strings.Contains(line, `"the duplicate"`) {
					if !strings.Contains(line, "1062") {
						t.Errorf("the refused statement: %s", line)
					}
					continue
				}
				lines = append(lines, line)
			}
			if got := strings.Join(lines, "\n"); got != want {
				t.Errorf("DuckDB's COMMIT refused:\n%s\nMariaDB's deadlock:\n%s", got, want)
			}
		})
	}
}

func pythonDeadlock(lib, module string) func(t *testing.T, how, addr, user, password, db string) string {
	return func(t *testing.T, how, addr, user, password, db string) string {
		t.Helper()
		return runClientScript(t, frontendtest.PythonWith(t, module), "testdata", []string{"python_deadlock.py", lib, how}, addr, user, password, db)
	}
}

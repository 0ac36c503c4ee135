package mysqlwire

import (
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestExecutableCommentsLikeMariaDB: MySQL's executable comments (/*! ... */, /*!NNNNN ... */),
// which mysqldump writes around its session settings, run through the proxy on the embedded
// DuckDB as MariaDB runs them, in a query and in a prepared statement: the body when the
// version is the server's or older, nothing when newer (11.0.0 is newer than both servers).
// They were comments to DuckDB: /*!40101 SET NAMES utf8mb4 */ failed as an empty query.
func TestExecutableCommentsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	for _, db := range []*sql.DB{maria, duck} {
		if _, err := db.Exec("/*!40101 SET NAMES utf8mb4 */"); err != nil {
			t.Fatalf("/*!40101 SET NAMES utf8mb4 */: %v", err)
		}
	}
	for _, q := range []string{
		"select /*!32302 10 + */ 1", "select /*! 10 + */ 1", "select /*!110000 10 + */ 1", "select 1 /*!40001 + 2 */ /* + 3 */",
		"select concat('/*!32302 10 + */' /*!40100 , 'x' */)", "select 1 -- /*!40100 + 1 */",
	} {
		var m, d sql.NullString
		if err := maria.QueryRow(q).Scan(&m); err != nil {
			t.Fatalf("MariaDB: %s: %v", q, err)
		}
		if err := duck.QueryRow(q).Scan(&d); err != nil {
			t.Errorf("DuckDB: %s: %v", q, err)
			continue
		}
		if m != d {
			t.Errorf("%s: MariaDB %v, DuckDB %v", q, m, d)
		}
	}
	var m, d int
	const prepared = "select /*!32302 10 + */ ? /*!110000 + 5 */"
	if err := maria.QueryRow(prepared, 1).Scan(&m); err != nil {
		t.Fatalf("MariaDB: %s: %v", prepared, err)
	}
	if err := duck.QueryRow(prepared, 1).Scan(&d); err != nil || d != m {
		t.Errorf("%s: MariaDB %d, DuckDB %d (%v)", prepared, m, d, err)
	}
}

// TestExecutableCommentsThroughClients: the same executable comments through the clients that
// send them (mysql2 as text queries and prepared statements, PyMySQL and mysqlclient with their
// client-side parameters, the mariadb CLI, which keeps /*! comments while it strips others)
// answer through the proxy on DuckDB what MariaDB answers them.
func TestExecutableCommentsThroughClients(t *testing.T) {
	const statements = "testdata/executable_comments.json"
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	duck := serveCore(t, "duck", eng, coreSetup{}).addr
	dsn, name := mytest.NewDatabase(t)
	maria, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs(statements)
	if err != nil {
		t.Fatal(err)
	}
	same := func(t *testing.T, onDuck, onMaria map[string]string) {
		if len(onMaria) == 0 {
			t.Fatal("nothing ran on MariaDB")
		}
		for probe, want := range onMaria {
			if got := onDuck[probe]; got != want {
				t.Errorf("%s:\n  QueryFlux on DuckDB %s\n  MariaDB             %s", probe, got, want)
			}
		}
	}
	t.Run("mysql2", func(t *testing.T) {
		same(t, runMySQL2Script(t, "mysql2_statements.js", duck, testUser, "", "duck", "STATEMENTS="+path),
			runMySQL2Script(t, "mysql2_statements.js", maria.Addr, maria.User, maria.Passwd, name, "STATEMENTS="+path))
	})
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			run := func(addr, user, password, db string) map[string]string {
				host, port, _ := net.SplitHostPort(addr)
				out, err := exec.Command(python, "testdata/python_statements.py", c.lib, host, port, user, password, db, path).CombinedOutput()
				if err != nil {
					t.Fatalf("%s against %s: %v\n%s", c.lib, addr, err, out)
				}
				return readProbes(t, out)
			}
			same(t, run(duck, testUser, "", "duck"), run(maria.Addr, maria.User, maria.Passwd, name))
		})
	}
	t.Run("mariadb CLI", func(t *testing.T) {
		cli, err := exec.LookPath("mariadb")
		if err != nil {
			t.Skip("mariadb CLI not installed")
		}
		var script strings.Builder
		var list [][]any
		raw, err := os.ReadFile(statements)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatal(err)
		}
		selects := 0 // each answers one line with -N -B
		for _, s := range list {
			if s[1] == nil { // the CLI has no parameters
				script.WriteString(s[0].(string) + ";\n")
				if strings.HasPrefix(s[0].(string), "select") {
					selects++
				}
			}
		}
		run := func(addr, user, password, db string) string {
			host, port, _ := net.SplitHostPort(addr)
			args := []string{"-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", user, "-N", "-B", "--force"}
			if password != "" {
				args = append(args, "-p"+password)
			}
			cmd := exec.Command(cli, append(args, db)...)
			cmd.Stdin = strings.NewReader(script.String())
			out, _ := cmd.CombinedOutput() // --force: an error is a line of the output
			return string(out)
		}
		want, got := run(maria.Addr, maria.User, maria.Passwd, name), run(duck, testUser, "", "duck")
		// --force words an error as a line: both servers failing alike must not pass.
		if strings.Contains(want, "ERROR") || strings.Count(want, "\n") != selects || !strings.Contains(want, "11\n") {
			t.Fatalf("MariaDB did not answer each of the %d selects (10 + 1 among them):\n%s", selects, want)
		}
		if got != want {
			t.Errorf("mariadb CLI:\nQueryFlux on DuckDB:\n%s\nMariaDB:\n%s", got, want)
		}
	})
}

package mysqlwire

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// writeCountSteps are the statements TestWriteCountsPerClientOnDuckDB runs, each [sql, params]
// (params nil: a text statement): an INSERT ... SELECT giving the AUTO_INCREMENT column NULL
// and 0, INSERT IGNORE of NULLs into NOT NULL columns and of duplicates, by text and by
// parameters, UPDATE IGNORE onto other rows' keys.
var writeCountSteps = [][2]any{
	{"CREATE TABLE wsrc (v INT)", nil},
	{"INSERT INTO wsrc VALUES (1), (2), (3)", nil},
	{"CREATE TABLE wa (id INT NOT NULL AUTO_INCREMENT, v INT, PRIMARY KEY (id))", nil},
	{"INSERT INTO wa (id, v) SELECT NULL, v FROM wsrc", nil},
	{"INSERT INTO wa SELECT 0, v FROM wsrc WHERE v < 3", nil},
	{"INSERT INTO wa (v, id) SELECT v, CASE WHEN v = 2 THEN 50 ELSE NULL END FROM wsrc", nil},
	{"INSERT INTO wa (v) VALUES (9)", nil},
	{"SELECT id, v, LAST_INSERT_ID() FROM wa ORDER BY id", nil},
	{"CREATE TABLE wc (id INT NOT NULL AUTO_INCREMENT, s VARCHAR(5) NOT NULL, n INT NOT NULL, u INT, PRIMARY KEY (id), UNIQUE KEY (u))", nil},
	{"INSERT IGNORE INTO wc (s, n, u) VALUES (NULL, 1, 1), ('a', NULL, 2)", nil},
	{"INSERT IGNORE INTO wc (s, n, u) VALUES ('b', 3, 1)", nil},
	{"INSERT IGNORE INTO wc (s, n, u) VALUES (?, ?, ?)", []any{nil, 4, 4}},
	{"INSERT IGNORE INTO wc (s, n, u) VALUES (?, ?, ?)", []any{"c", 5, 2}},
	{"INSERT IGNORE INTO wc (s, n, u) VALUES ('d', 6, 6), ('e', 7, 6), (NULL, NULL, NULL)", nil},
	{"SELECT id, s, n, u, LAST_INSERT_ID() FROM wc ORDER BY id", nil},
	{"CREATE TABLE wd (id INT NOT NULL, u INT, PRIMARY KEY (id), UNIQUE KEY (u))", nil},
	{"INSERT INTO wd VALUES (1, 1), (2, 2), (3, 3), (4, 4)", nil},
	{"UPDATE IGNORE wd SET u = u + 1", nil},
	{"UPDATE IGNORE wd SET u = ? WHERE id < ?", []any{3, 3}},
	{"SELECT id, u FROM wd ORDER BY id", nil},
}

// TestWriteCountsPerClientOnDuckDB: PyMySQL and mysql2 see from the proxy on the embedded
// DuckDB what they see from MariaDB for writeCountSteps: each statement's insert id
// (lastrowid, insertId), affected rows (rowcount, affectedRows), the OK packet's warning count
// (PyMySQL's result's warning_count, mysql2's warningStatus) and the rows after. Before: the
// INSERT ... SELECTs failed (1048, 1062), the INSERT IGNOREs of NULL failed (1048), a
// duplicate gave no warning, the UPDATE IGNOREs failed (1062).
func TestWriteCountsPerClientOnDuckDB(t *testing.T) {
	steps, err := json.Marshal(writeCountSteps)
	if err != nil {
		t.Fatal(err)
	}
	for i, client := range []string{"pymysql", "mysql2"} {
		if !testlong.Sample(i, 2) {
			continue // mysql2 under make test-long: each client's run is seconds
		}
		t.Run(client, func(t *testing.T) {
			var cmd func(addr, user, db string) *exec.Cmd
			if client == "mysql2" {
				dir := frontendtest.NodeClients(t, "mysql2")
				cmd = func(addr, user, db string) *exec.Cmd {
					host, port, _ := net.SplitHostPort(addr)
					c := exec.Command("node", "mysql2_writecounts.js")
					c.Dir, c.Env = dir, append(os.Environ(), "MYSQL_HOST="+host, "MYSQL_PORT="+port, "MYSQL_USER="+user, "MYSQL_DB="+db)
					return c
				}
			} else {
				python := frontendtest.PythonWith(t, "pymysql")
				cmd = func(addr, user, db string) *exec.Cmd {
					host, port, _ := net.SplitHostPort(addr)
					return exec.Command(python, "testdata/python_writecounts.py", host, port, user, db)
				}
			}
			run := func(c *exec.Cmd) string {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				dir, env := c.Dir, c.Env
				c = exec.CommandContext(ctx, c.Path, c.Args[1:]...)
				c.Dir, c.Env = dir, env
				var stderr bytes.Buffer
				c.Stdin, c.Stderr = bytes.NewReader(steps), &stderr
				out, err := c.Output()
				if err != nil {
					t.Fatalf("%v: %v\n%s\n%s", c.Args, err, out, stderr.String())
				}
				return strings.TrimSpace(string(out))
			}
			dsn, direct := mytest.NewDatabase(t)
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := run(cmd(cfg.Addr, cfg.User, direct))
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			if got := run(cmd(serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "duck")); got != want {
				t.Errorf("%s on DuckDB:\n%s\nMariaDB itself:\n%s", client, got, want)
			}
		})
	}
}

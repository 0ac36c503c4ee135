package mysqlwire

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// cappedCore is coreServer with its engine capped at one connection twice over: the engine's
// own limit (MaxConns 1) and MariaDB's for its user (MAX_USER_CONNECTIONS 1), the user granted
// a second database (f.dbName's, other) the engine's connections do not start in.
func cappedCore(t *testing.T, s coreSetup) (f *coreFixture, other string) {
	t.Helper()
	dsn, name := mytest.NewDatabase(t)
	_, other = mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	user, password := "qfc_"+name[len(name)-12:], "one-connection"
	for _, stmt := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s' WITH MAX_USER_CONNECTIONS 1", user, password),
		fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", name, user),
		fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", other, user),
		fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY)", other),
		fmt.Sprintf("INSERT INTO `%s`.t VALUES (7)", other),
	} {
		if _, err := direct.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = direct.Exec(fmt.Sprintf("DROP USER '%s'@'%%'", user)) })
	eng, err := mysqlengine.Open(mysqlengine.Config{Name: "mariadb", Addr: cfg.Addr, User: user, Password: password, Database: name, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f = serveCore(t, "maria", eng, s)
	f.dbName, f.direct = name, direct
	return f, other
}

// TestDatabaseChangesOnACappedClusterAsMariaDB: PyMySQL, mysqlclient and mysql2 log in to a
// database, USE, select_db and change_user between two, on a MariaDB engine capped at one
// connection (by its MaxConns and by MariaDB's MAX_USER_CONNECTIONS for its user), first alone,
// then while another client's transaction holds that connection: every command answers as
// MariaDB's own (none waits for the transaction's end), on the loop and on the goroutine.
// The database checks' describe path left a connection idle that the statement path could not
// draw from (1429 at the next USE), and USE, COM_INIT_DB and COM_CHANGE_USER waited, unbounded,
// for the held connection.
func TestDatabaseChangesOnACappedClusterAsMariaDB(t *testing.T) {
	clients := []string{"pymysql", "mysqldb", "mysql2"}
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			f, other := cappedCore(t, coreSetup{noLoop: path.noLoop})
			root, err := mysql.ParseDSN(mytest.ServerDSN())
			if err != nil {
				t.Fatal(err)
			}
			for i, client := range clients {
				if !testlong.Sample(i, 2) {
					continue
				}
				want := cappedScript(t, client, root.Addr, root.User, root.Passwd, f.dbName, other)
				if len(want) < 14 {
					t.Fatalf("%s on MariaDB: %d probes", client, len(want))
				}
				got := cappedScript(t, client, f.addr, testUser, "", f.dbName, other)
				for probe, w := range want { //determinism:ok each probe is compared alone
					if got[probe] != w {
						t.Errorf("%s: %s:\n proxy   %s\n MariaDB %s", client, probe, got[probe], w)
					}
				}
			}
		})
	}
}

// cappedScript runs client's capped script (python_capped.py, mysql2_capped.js) against addr.
func cappedScript(t *testing.T, client, addr, user, password, db, other string) map[string]string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a command that waits for the holder never answers
	defer cancel()
	var cmd *exec.Cmd
	if client == "mysql2" {
		cmd = exec.CommandContext(ctx, "node", "mysql2_capped.js")
		cmd.Dir = frontendtest.NodeClients(t, "mysql2")
		cmd.Env = append(os.Environ(), "MYSQL_HOST="+host, "MYSQL_PORT="+port, "MYSQL_USER="+user,
			"MYSQL_PASSWORD="+password, "MYSQL_DB="+db, "MYSQL_OTHER="+other)
	} else {
		module := map[string]string{"pymysql": "pymysql", "mysqldb": "MySQLdb"}[client]
		cmd = exec.CommandContext(ctx, frontendtest.PythonWith(t, module), "testdata/python_capped.py", client, host, port, user, password, db, other)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s against %s: %v\n%s\n%s", client, addr, err, out, stderr.String())
	}
	return readProbes(t, out)
}

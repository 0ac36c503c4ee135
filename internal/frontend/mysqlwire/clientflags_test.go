package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// flagSetups are the ways a statement reaches a MariaDB engine: the event loop's relay, the
// session goroutine's relay, and the Arrow path (settings.passthrough: false).
var flagSetups = map[string]coreSetup{"loop": {}, "relay": {noLoop: true}, "arrow": {noPassthrough: true}}

// TestClientFlagsAsMariaDB: what PyMySQL, mysqlclient, node mysql2 and go-sql-driver users see
// of the capability flags that change what MariaDB does for a session (CLIENT_FOUND_ROWS: an
// UPDATE that changes nothing counts the rows it matched; CLIENT_IGNORE_SPACE: count (*)
// parses; CLIENT_MULTI_STATEMENTS) is, through the proxy on a MariaDB cluster, what MariaDB
// itself shows them, by every path, with connections of both flag sets in use at once, and
// mysql2's changedRows, read in the OK packet's info, is MariaDB's on the relay paths, and so is
// LOAD DATA LOCAL INFILE of a client that offers its files. The differences, on the Arrow path:
// that LOAD DATA is refused (MariaDB's 4166), and no OK info is carried.
func TestClientFlagsAsMariaDB(t *testing.T) {
	infile := filepath.Join(t.TempDir(), "load.csv")
	if err := os.WriteFile(infile, []byte("1,2\n3,4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	direct := func(t *testing.T) (addr, user, password, db string) {
		dsn, name := mytest.NewDatabase(t)
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Addr, cfg.User, cfg.Passwd, name
	}
	clients := map[string]func(t *testing.T, addr, user, password, db string) string{
		"go-sql-driver": goFlags,
		"mysql2": func(t *testing.T, addr, user, password, db string) string {
			return runClientScript(t, "node", frontendtest.NodeClients(t, "mysql2"), []string{"mysql2_flags.js"}, addr, user, password, db)
		},
	}
	for lib, module := range map[string]string{"pymysql": "pymysql", "mysqldb": "MySQLdb"} {
		clients[lib] = func(t *testing.T, addr, user, password, db string) string {
			host, port, _ := net.SplitHostPort(addr)
			return runClientScript(t, frontendtest.PythonWith(t, module), "", []string{"testdata/python_flags.py", lib, host, port, user, password, db, infile}, addr, user, password, db)
		}
	}
	for client, run := range clients {
		t.Run(client, func(t *testing.T) {
			addr, user, password, db := direct(t)
			want := run(t, addr, user, password, db)
			if !strings.Contains(want, "1") {
				t.Fatalf("on MariaDB itself:\n%s", want)
			}
			for name, setup := range flagSetups {
				t.Run(name, func(t *testing.T) {
					f := coreServer(t, setup)
					got, want := run(t, f.addr, testUser, "", f.dbName), want
					if setup.noPassthrough {
						// MariaDB loads the file for a client that offers it, and so does the relay;
						// on the Arrow path it is refused.
						want = strings.Replace(want, "local infile with: affected 2\nloaded: [('2',)]", "local infile with: error 4166\nloaded: [('0',)]", 1)
						// The Arrow path has no OK info to pass on (go-mysql's client skips it):
						// mysql2's changedRows, read there, is 0.
						got, want = withoutLines(got, "changedRows"), withoutLines(want, "changedRows")
					}
					sameLines(t, name, got, want)
				})
			}
		})
	}
}

// withoutLines is s without its lines that hold sub.
func withoutLines(s, sub string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, sub) }), "\n")
}

// goFlags: go-sql-driver's view of CLIENT_FOUND_ROWS (clientFoundRows=true, which it asks for
// only when the server offers it), two pools at once, by text, prepared statement and in a
// transaction.
func goFlags(t *testing.T, addr, user, password, db string) string {
	found := openDB(t, addr, user, password, db, "clientFoundRows=true")
	plain := openDB(t, addr, user, password, db, "")
	ctx := context.Background()
	for _, s := range []string{"create table flags_g (id int primary key, v int)", "insert into flags_g values (1, 1), (2, 2)"} {
		if _, err := plain.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var out strings.Builder
	for i := range 3 {
		for _, d := range []struct {
			name string
			db   *sql.DB
		}{{"found rows", found}, {"plain", plain}} {
			res, err := d.db.ExecContext(ctx, "update flags_g set v = v")
			fmt.Fprintf(&out, "%s update %d: %s\n", d.name, i, affected(res, err))
			res, err = d.db.ExecContext(ctx, "update flags_g set v = ? where id <= ?", 2, 2)
			fmt.Fprintf(&out, "%s prepared update %d: %s\n", d.name, i, affected(res, err))
			tx, err := d.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err = tx.ExecContext(ctx, "update flags_g set v = v")
			fmt.Fprintf(&out, "%s update in a transaction %d: %s\n", d.name, i, affected(res, err))
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return strings.TrimSpace(out.String())
}

func affected(res sql.Result, err error) string {
	if err != nil {
		return mysqlErrno(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprint(n)
}

// TestDjangoSavesAnUnchangedRowAsOnMariaDB: Django's Model.save() of a row it did not change
// (an UPDATE that matches the row and changes nothing, which Django's backend counts under
// CLIENT_FOUND_ROWS) saves it through the proxy on a MariaDB cluster as on MariaDB itself, by
// every path: counted 0, Django would take the row for gone and INSERT it again (1062).
func TestDjangoSavesAnUnchangedRowAsOnMariaDB(t *testing.T) {
	python := frontendtest.PythonWith(t, "django, MySQLdb")
	run := func(addr, user, password, db string) string {
		host, port, _ := net.SplitHostPort(addr)
		return runClientScript(t, python, "", []string{"testdata/django_save.py", host, port, user, password, db}, addr, user, password, db)
	}
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := run(cfg.Addr, cfg.User, cfg.Passwd, name)
	if !strings.Contains(want, "save unchanged: 1\n") {
		t.Fatalf("on MariaDB itself:\n%s", want)
	}
	for name, setup := range flagSetups {
		t.Run(name, func(t *testing.T) {
			f := coreServer(t, setup)
			sameLines(t, name, run(f.addr, testUser, "", f.dbName), want)
		})
	}
}

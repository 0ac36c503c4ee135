package mysqlwire

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/node/proxy"
)

// Probes of LOAD DATA LOCAL INFILE that run inside a transaction (on the session's pinned
// engine connection, the Arrow path): MariaDB refuses them there as it refuses a client
// without CLIENT_LOCAL_FILES (4166), and the probes after them see nothing loaded.
var infileInATransaction = map[string]bool{
	"load in a transaction": true, "after the transaction": true, // python_infile.py
	"infile in a transaction": true, // mysql2_part3.js
}

// TestPythonLoadDataLocalAsMariaDB: PyMySQL's and mysqlclient's LOAD DATA LOCAL INFILE
// (local_infile on) loads through the proxy's relay what it loads on MariaDB: 2,000 lines of
// non-ASCII text, duplicates, IGNORE and REPLACE, a missing file (each client's own error), and
// the 4166 of local_infile off. In a transaction (autocommit off) and with
// settings.passthrough: false, where the statement takes the Arrow path, MariaDB refuses it
// with 4166 through the proxy, and nothing is loaded.
func TestPythonLoadDataLocalAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			direct := runPythonScript(t, python, "testdata/python_infile.py", c.lib, cfg.Addr, cfg.User, cfg.Passwd, name, t.TempDir())
			if !strings.Contains(direct["load"], `"ok": 2000`) {
				t.Fatalf("MariaDB did not load the file: %s", direct["load"])
			}
			for _, passthrough := range []bool{true, false} {
				f := coreServer(t, coreSetup{noPassthrough: !passthrough})
				proxied := runPythonScript(t, python, "testdata/python_infile.py", c.lib, f.addr, testUser, "", f.dbName, t.TempDir())
				checkInfileProbes(t, passthrough, direct, proxied, name, f.dbName, []string{"load", "load duplicates", "load ignore", "load replace", "load in a transaction"})
			}
		})
	}
}

// checkInfileProbes compares the probes of a LOAD DATA LOCAL script through the proxy with
// MariaDB's. On the relay every probe is MariaDB's but those in a transaction, whose loads are
// refused with 4166; with passthrough false every load (loads) is refused with 4166, and the
// probes that count what was loaded are not compared.
func checkInfileProbes(t *testing.T, passthrough bool, direct, proxied map[string]string, name, proxiedName string, loads []string) {
	t.Helper()
	isLoad := map[string]bool{}
	for _, p := range loads {
		isLoad[p] = true
	}
	// Each run loads from a directory of its own, named in a missing file's error.
	missing := regexp.MustCompile(`'[^' ]*/missing\.csv'`)
	for probe, want := range direct {
		got := proxied[probe]
		refused := isLoad[probe] && (!passthrough || infileInATransaction[probe])
		switch {
		case refused:
			if !strings.Contains(got, "4166") {
				t.Errorf("passthrough %v, %s: %s, want refused with 4166", passthrough, probe, got)
			}
		case !passthrough || infileInATransaction[probe]:
			// counts what a refused load did not load
		default:
			g := missing.ReplaceAllString(strings.ReplaceAll(got, proxiedName, "db"), "'DIR/missing.csv'")
			w := missing.ReplaceAllString(strings.ReplaceAll(want, name, "db"), "'DIR/missing.csv'")
			if g != w {
				t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", passthrough, probe, g, w)
			}
		}
	}
	if len(proxied) != len(direct) {
		t.Errorf("passthrough %v: %d probes through the proxy, %d direct", passthrough, len(proxied), len(direct))
	}
}

// TestMySQL2LoadDataLocalAsMariaDB: mysql2's LOAD DATA LOCAL INFILE (infileStreamFactory: a
// file, a stream in pieces, 100,000 lines in 100 chunks, a missing file, a line with warnings)
// loads through the relay what it loads on MariaDB, with the same OK (affected rows, info,
// warnings); a client without CLIENT_LOCAL_FILES gets MariaDB's 4166.
func TestMySQL2LoadDataLocalAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	direct := runMySQL2Script(t, "mysql2_part3.js", cfg.Addr, cfg.User, cfg.Passwd, name, "PROBES=infile")
	if !strings.Contains(direct["infile big"], "100000") {
		t.Fatalf("MariaDB did not load the stream: %s", direct["infile big"])
	}
	for _, passthrough := range []bool{true, false} {
		f := coreServer(t, coreSetup{noPassthrough: !passthrough})
		proxied := runMySQL2Script(t, "mysql2_part3.js", f.addr, testUser, "", f.dbName, "PROBES=infile")
		checkInfileProbes(t, passthrough, direct, proxied, name, f.dbName, []string{"infile file", "infile stream", "infile big", "infile in a transaction", "infile warnings"})
	}
}

// TestLoadDataLocalPastTheGuardrail: a relayed LOAD DATA LOCAL INFILE (go-sql-driver, a reader
// handler) counts the file's bytes as the statement's relayed bytes: a file past
// maxResultBytes fails with the limit's error, nothing of it is loaded (the statement is
// aborted on the engine, not ended early), and the connection serves on; a file within it
// loads whole.
func TestLoadDataLocalPastTheGuardrail(t *testing.T) {
	eng, _, name := frontendtest.MariaDB(t)
	frontendtest.Exec(t, eng, "CREATE TABLE li (id INT PRIMARY KEY, s VARCHAR(40)) ENGINE=InnoDB")
	addr, _ := relayCore(t, eng, proxy.Limits{MaxResultBytes: 1 << 20}, Options{})
	lines := func(n int) func() io.Reader {
		return func() io.Reader {
			pr, pw := io.Pipe()
			go func() {
				for i := range n {
					fmt.Fprintf(pw, "%d,line %d of the file\n", i, i)
				}
				pw.Close()
			}()
			return pr
		}
	}
	gomysql.RegisterReaderHandler("qf_small", lines(1000))   // about 25 KB
	gomysql.RegisterReaderHandler("qf_large", lines(200000)) // about 5 MB
	t.Cleanup(func() { gomysql.DeregisterReaderHandler("qf_small"); gomysql.DeregisterReaderHandler("qf_large") })
	db := openDB(t, addr, testUser, "", name, "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("LOAD DATA LOCAL INFILE 'Reader::qf_large' INTO TABLE li FIELDS TERMINATED BY ','")
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || !strings.Contains(me.Message, "maxResultBytes") {
		t.Fatalf("a 5 MB file past maxResultBytes 1 MB: %v", err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM li").Scan(&n); err != nil || n != 0 {
		t.Fatalf("after the refused file: %d rows, %v; want none loaded", n, err)
	}
	res, err := db.Exec("LOAD DATA LOCAL INFILE 'Reader::qf_small' INTO TABLE li FIELDS TERMINATED BY ','")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.RowsAffected(); got != 1000 {
		t.Errorf("the small file: %d rows affected, want 1000", got)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM li").Scan(&n); err != nil || n != 1000 {
		t.Errorf("after the small file: %d rows, %v", n, err)
	}
}

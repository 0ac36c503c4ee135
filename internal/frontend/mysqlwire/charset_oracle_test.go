package mysqlwire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// charsetProbes runs testdata/python_charset.py and returns each probe's line as printed;
// charsetOutcomes reads them.
func charsetProbes(t *testing.T, python, lib, addr, user, password, db, charset, autocommit string) map[string]string {
	t.Helper()
	return pythonProbes(t, python, "testdata/python_charset.py", lib, addr, user, password, db, []string{charset, autocommit}, nil)
}

// charsetOutcomes is each probe's outcome as text; the column lengths are left out when
// !lengths (the Arrow path's are its own: types.go).
func charsetOutcomes(t *testing.T, lines map[string]string, lengths bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, line := range lines {
		var p struct {
			OK     json.RawMessage `json:"ok"`
			Error  json.RawMessage `json:"error"`
			Fields [][]any         `json:"fields"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if !lengths {
			for _, f := range p.Fields {
				f[2] = "-"
			}
		}
		out[name] = fmt.Sprintf("ok %s error %s fields %v", p.OK, p.Error, p.Fields)
	}
	return out
}

// TestPythonCharsetsAsMariaDB: PyMySQL and mysqlclient logged in with charset latin1, utf8
// (utf8mb3) and utf8mb4, autocommit on (the relay) and off (every statement in a pinned
// transaction), read and write text through the proxy as with MariaDB itself, on the relay
// and with settings.passthrough: false: the session's character set variables, the bytes
// stored in latin1 and utf8mb4 columns and read back, LIKE with a parameter, literals, a
// 4-byte character from a utf8mb3 client, an error naming a non-ASCII table, SET NAMES in the
// middle of the session, and the charset number (and, on the relay, the length) of each
// column PyMySQL is sent.
func TestPythonCharsetsAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			fronts := []*coreFixture{coreServer(t, coreSetup{}), coreServer(t, coreSetup{noPassthrough: true})}
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			for n, charset := range []string{"latin1", "utf8", "utf8mb4"} {
				if !testlong.Sample(n, 2) {
					continue
				}
				for _, autocommit := range []string{"1", "0"} {
					// MariaDB's answer does not depend on the front: the script drops its
					// tables first, so one run serves both.
					mariadb := charsetProbes(t, python, c.lib, cfg.Addr, cfg.User, cfg.Passwd, name, charset, autocommit)
					for i, f := range fronts {
						passthrough := i == 0
						relay := passthrough && autocommit == "1"
						direct := charsetOutcomes(t, mariadb, relay)
						db := f.dbName
						proxied := charsetOutcomes(t, charsetProbes(t, python, c.lib, f.addr, testUser, "", db, charset, autocommit), relay)
						for probe, want := range direct {
							want = strings.ReplaceAll(want, name, "db")
							if got := strings.ReplaceAll(proxied[probe], db, "db"); got != want {
								t.Errorf("%s, autocommit %s, passthrough %v, %s:\n proxy  %s\n direct %s", charset, autocommit, passthrough, probe, got, want)
							}
						}
						if len(direct) < 15 || len(proxied) != len(direct) {
							t.Errorf("%s, autocommit %s: %d probes direct, %d through the proxy", charset, autocommit, len(direct), len(proxied))
						}
					}
				}
			}
		})
	}
}

// withoutLengths is a probe's JSON with every "length" member dropped.
func withoutLengths(t *testing.T, v string) string {
	t.Helper()
	var x any
	if err := json.Unmarshal([]byte(v), &x); err != nil {
		return v // an "error ..." outcome
	}
	var drop func(any)
	drop = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, "length")
			for _, v := range x {
				drop(v)
			}
		case []any:
			for _, v := range x {
				drop(v)
			}
		}
	}
	drop(x)
	b, _ := json.Marshal(x)
	return string(b)
}

// TestMySQL2CharsetsAsMariaDB: node mysql2 logged in with latin1's, utf8mb3's and utf8mb4's
// collations reads and writes text through the proxy as with MariaDB itself, by text and
// prepared statement, in and out of a transaction, on the relay and with
// settings.passthrough: false; compares literals by the collation (utf8mb4_unicode_ci's
// 'ß' = 'ss'); SET NAMES ... COLLATE in the middle; the columns' charsets too, and their
// lengths where the relay answers (the Arrow path writes lengths of its own).
func TestMySQL2CharsetsAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fronts := []*coreFixture{coreServer(t, coreSetup{}), coreServer(t, coreSetup{noPassthrough: true})}
	for c, charset := range []string{"LATIN1_SWEDISH_CI", "LATIN1_BIN", "UTF8_GENERAL_CI", "UTF8MB4_UNICODE_CI", "UTF8MB4_BIN", "UTF8MB4_GENERAL_CI"} {
		if !testlong.Sample(c, 3) {
			continue
		}
		// MariaDB's answer does not depend on the front (the script drops its tables first).
		direct := runMySQL2Script(t, "mysql2_charset.js", cfg.Addr, cfg.User, cfg.Passwd, name, "MYSQL_CHARSET="+charset)
		for i, f := range fronts {
			passthrough := i == 0
			proxied := runMySQL2Script(t, "mysql2_charset.js", f.addr, testUser, "", f.dbName, "MYSQL_CHARSET="+charset)
			for probe, want := range direct {
				got := proxied[probe]
				if !passthrough || strings.HasPrefix(probe, "tx ") {
					got, want = withoutLengths(t, got), withoutLengths(t, want)
				}
				if got != want {
					t.Errorf("%s, passthrough %v, %s:\n proxy  %s\n direct %s", charset, passthrough, probe, got, want)
				}
			}
			if len(direct) < 10 || len(proxied) != len(direct) {
				t.Errorf("%s: %d probes direct, %d through the proxy", charset, len(direct), len(proxied))
			}
		}
	}
}

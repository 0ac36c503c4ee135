package mysqlwire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// charsetProbes runs testdata/python_charset.py and returns each probe's outcome as text; the
// column lengths are left out when !lengths (the Arrow path's are its own: types.go).
func charsetProbes(t *testing.T, python, lib, addr, user, password, db, charset, autocommit string, lengths bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, line := range pythonProbes(t, python, "testdata/python_charset.py", lib, addr, user, password, db, []string{charset, autocommit}, nil) {
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
			for _, charset := range []string{"latin1", "utf8", "utf8mb4"} {
				for _, autocommit := range []string{"1", "0"} {
					for i, f := range fronts {
						passthrough := i == 0
						relay := passthrough && autocommit == "1"
						direct := charsetProbes(t, python, c.lib, cfg.Addr, cfg.User, cfg.Passwd, name, charset, autocommit, relay)
						db := f.dbName
						proxied := charsetProbes(t, python, c.lib, f.addr, testUser, "", db, charset, autocommit, relay)
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

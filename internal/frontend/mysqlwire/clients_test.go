package mysqlwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// runMySQL2 runs the mysql2 probe script against addr and returns each probe's JSON outcome.
func runMySQL2(t *testing.T, addr, user, password, db, probes string, env ...string) map[string]string {
	t.Helper()
	return runMySQL2Script(t, "mysql2_probe.js", addr, user, password, db, append(env, "PROBES="+probes)...)
}

// runMySQL2Script runs a node script printing probe lines (readProbes) against addr.
func runMySQL2Script(t *testing.T, script, addr, user, password, db string, env ...string) map[string]string {
	t.Helper()
	dir := frontendtest.NodeClients(t, "mysql2")
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "MYSQL_HOST="+host, "MYSQL_PORT="+port, "MYSQL_USER="+user, "MYSQL_PASSWORD="+password, "MYSQL_DB="+db), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mysql2 probes against %s: %v\n%s\n%s", addr, err, out, stderr.String())
	}
	return readProbes(t, out)
}

// readProbes reads a probe script's JSON lines, {"probe": name, "ok": value} or {"probe":
// name, "error": value}, into each probe's value ("error " and the error's when it failed).
func readProbes(t *testing.T, out []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20) // a line holds a whole result (TestClientEdgeValues: 2 MB)
	for sc.Scan() {
		var line struct {
			Probe string          `json:"probe"`
			OK    json.RawMessage `json:"ok"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("probe output %q: %v", sc.Text(), err)
		}
		if line.Error != nil {
			got[line.Probe] = "error " + string(line.Error)
		} else {
			got[line.Probe] = string(line.OK)
		}
	}
	return got
}

// TestMySQL2AsMariaDB: what node mysql2 sees through the proxy relaying to MariaDB — prepared
// statements with dates, decimals, JSON, blobs, bits, unsigned and TIME parameters, zero
// dates, column metadata with MariaDB's extended type info (JSON parsed into objects; UUID,
// INET4, INET6, POINT named), warnings and SHOW WARNINGS, stacked statements refused, errors —
// is what it sees from MariaDB itself, with JSON as objects and as strings (jsonStrings).
func TestMySQL2AsMariaDB(t *testing.T) {
	for _, jsonStrings := range []string{"0", "1"} {
		t.Run("jsonStrings="+jsonStrings, func(t *testing.T) {
			f := coreServer(t, coreSetup{})
			proxied := runMySQL2(t, f.addr, testUser, "", f.dbName, "mariadb", "JSON_STRINGS="+jsonStrings)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			direct := runMySQL2(t, cfg.Addr, cfg.User, cfg.Passwd, name, "mariadb", "JSON_STRINGS="+jsonStrings)
			if len(direct) < 10 {
				t.Fatalf("direct run: %d probes", len(direct))
			}
			for probe, want := range direct {
				if probe == "mariadb types in a transaction" {
					continue // the Arrow path: below
				}
				if got := proxied[probe]; got != want {
					t.Errorf("%s:\n proxy  %s\n direct %s", probe, got, want)
				}
			}
			for _, probe := range []string{"insert date param", "zero dates binary", "warnings", "warnings of rows", "warnings of prepared", "mariadb types insert"} {
				if strings.HasPrefix(direct[probe], "error") {
					t.Errorf("%s failed on MariaDB itself: %s", probe, direct[probe])
				}
			}
			if jsonStrings == "0" && !strings.Contains(direct["mariadb types text"], `"j":{"a":[1,{"b":null}]}`) {
				t.Errorf("mysql2 did not parse MariaDB's JSON itself: %s", direct["mariadb types text"])
			}
			// A pinned transaction's statements take the Arrow path: its column definitions are
			// the proxy's own, with the extended metadata MariaDB sent, so mysql2 reads the same
			// values (JSON as objects) from columns typed as the Arrow path types them.
			sameRowsAndExtended(t, "in a transaction", proxied["mariadb types in a transaction"], direct["mariadb types in a transaction"])
			// So does every statement with settings.passthrough: false.
			arrow := coreServer(t, coreSetup{noPassthrough: true})
			onArrow := runMySQL2(t, arrow.addr, testUser, "", arrow.dbName, "mariadb", "JSON_STRINGS="+jsonStrings)
			for _, probe := range []string{"mariadb types text", "mariadb types binary", "mariadb types in a transaction"} {
				sameRowsAndExtended(t, "passthrough false, "+probe, onArrow[probe], direct[probe])
			}
			// A POINT's column is MariaDB's there too (type 255, binary), so mysql2 reads it as {x, y}.
			for _, probe := range []string{"mariadb types text", "mariadb types binary"} {
				if got, want := fieldOf(t, onArrow[probe], "g"), fieldOf(t, direct[probe], "g"); got != want {
					t.Errorf("passthrough false, %s: column g %s, MariaDB's %s", probe, got, want)
				}
			}
		})
	}
}

// fieldOf is the description mysql2 gives of column name in a probe's [rows, fields]: its
// type, character set, flags and length.
func fieldOf(t *testing.T, probe, name string) string {
	t.Helper()
	var pair [2]json.RawMessage
	var fields []struct {
		Name    string `json:"name"`
		Type    int    `json:"type"`
		Charset int    `json:"charset"`
		Flags   int    `json:"flags"`
		Length  int64  `json:"length"`
	}
	if json.Unmarshal([]byte(probe), &pair) != nil || json.Unmarshal(pair[1], &fields) != nil {
		t.Fatalf("not [rows, fields]: %s", probe)
	}
	for _, f := range fields {
		if f.Name == name {
			return fmt.Sprintf("type %d charset %d flags %d length %d", f.Type, f.Charset, f.Flags, f.Length)
		}
	}
	return "none"
}

// sameRowsAndExtended checks a probe's [rows, fields] against direct's: the same rows (but for
// the columns named in unlike), and each column's extended metadata (typeName, format) the
// same.
func sameRowsAndExtended(t *testing.T, what, got, direct string, unlike ...string) {
	t.Helper()
	type field struct {
		TypeName string `json:"typeName"`
		Format   string `json:"format"`
	}
	read := func(probe string) (rows string, fields []field) {
		var pair [2]json.RawMessage
		var rs []map[string]json.RawMessage
		if json.Unmarshal([]byte(probe), &pair) != nil || json.Unmarshal(pair[0], &rs) != nil || json.Unmarshal(pair[1], &fields) != nil {
			t.Errorf("%s: not [rows, fields]: %s", what, probe)
		}
		for _, r := range rs {
			for _, c := range unlike {
				delete(r, c)
			}
		}
		b, _ := json.Marshal(rs)
		return string(b), fields
	}
	gRows, gFields := read(got)
	dRows, dFields := read(direct)
	if gRows != dRows || !slices.Equal(gFields, dFields) {
		t.Errorf("%s:\n proxy  %s %+v\n direct %s %+v", what, gRows, gFields, dRows, dFields)
	}
}

// TestMySQL2OnDuckDB: node mysql2 against the embedded engine: binary parameters decoded
// exactly, JSON columns as MySQL describes them (mysql2 parses their values, as it parses
// MariaDB's JSON), UUID columns as MariaDB describes them, stacked statements refused, and
// DuckDB's errors as MySQL's numbers and states; all alike when the frontend offers MariaDB's
// extended metadata and mysql2 asks for it (every column definition then has an empty block).
func TestMySQL2OnDuckDB(t *testing.T) {
	for _, offered := range []bool{false, true} {
		t.Run(fmt.Sprintf("extended metadata %v", offered), func(t *testing.T) {
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			var backend query.Backend = frontendtest.NewBackend(eng)
			if offered {
				backend = metadataBackend{frontendtest.NewBackend(eng)}
			}
			addr := startServer(t, backend, Options{})
			got := runMySQL2(t, addr, testUser, "", "", "duckdb")
			want := map[string]string{
				"create":                     `"ok"`,
				"insert date param":          `1`,
				"insert typed params":        `1`,
				"params decoded":             `[{"i":-5,"f":2.5,"s":"x","n":null}]`,
				"stacked without flag":       `error {"errno":1064,"sqlState":"42000","code":"ER_PARSE_ERROR"}`,
				"stacked probe table absent": `[{"n":"0"}]`,
				"no such table":              `error {"errno":1146,"sqlState":"42S02","code":"ER_NO_SUCH_TABLE"}`,
				"no such table prepared":     `error {"errno":1146,"sqlState":"42S02","code":"ER_NO_SUCH_TABLE"}`,
				"syntax":                     `error {"errno":1064,"sqlState":"42000","code":"ER_PARSE_ERROR"}`,
			}
			for probe, w := range want {
				if got[probe] != w {
					t.Errorf("%s: %s, want %s", probe, got[probe], w)
				}
			}
			for _, probe := range []string{"select binary", "select text"} {
				for _, frag := range []string{
					`"dt":"2024-01-02 03:04:05`, `"d":"12.34"`, `"u":"123e4567-e89b-12d3-a456-426614174000"`, `"b":{"buffer":"0001ff"}`,
					`"j":{"a":[1,2]}`, `{"name":"j","type":245,"charset":45`, `{"name":"u","type":254,"charset":45`,
				} {
					if !strings.Contains(got[probe], frag) {
						t.Errorf("%s: no %s in %s", probe, frag, got[probe])
					}
				}
			}
		})
	}
}

// metadataBackend is a backend whose engines all have MariaDB's extended metadata: the
// frontend offers it to its clients.
type metadataBackend struct{ *frontendtest.Backend }

func (metadataBackend) ExtendedMetadata() bool { return true }

// runPython runs testdata/python_probe.py with lib against addr; one JSON line per probe.
func runPython(t *testing.T, python, lib, addr, user, password, db string) map[string]string {
	t.Helper()
	return pythonProbes(t, python, "testdata/python_probe.py", lib, addr, user, password, db, nil, nil)
}

// TestPythonClientsAsMariaDB: PyMySQL and mysqlclient see through the proxy what they see from
// MariaDB: column type codes (JSON is 252), zero dates, unsigned values, warning counts and
// SHOW WARNINGS, stacked statements (refused by PyMySQL's default, run by mysqlclient's),
// errors.
func TestPythonClientsAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			f := coreServer(t, coreSetup{})
			proxied := runPython(t, python, c.lib, f.addr, testUser, "", f.dbName)
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			direct := runPython(t, python, c.lib, cfg.Addr, cfg.User, cfg.Passwd, name)
			if len(direct) != 7 || !strings.Contains(direct["select"], `["j", 252]`) {
				t.Fatalf("direct run: %v", direct)
			}
			for probe, want := range direct {
				if got := proxied[probe]; got != want {
					t.Errorf("%s:\n proxy  %s\n direct %s", probe, got, want)
				}
			}
		})
	}
}

// TestPythonClientsOnDuckDBNameColumnsAsMariaDB: PyMySQL and mysqlclient against the embedded
// engine get result columns named as MariaDB names them (the item as written: count(*), 40+2),
// not as DuckDB does (count_star(), (40 + 2)).
func TestPythonClientsOnDuckDBNameColumnsAsMariaDB(t *testing.T) {
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			addr := startServer(t, frontendtest.NewBackend(eng), Options{})
			onDuckDB := runPython(t, python, c.lib, addr, testUser, "", "")
			dsn, name := mytest.NewDatabase(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			direct := runPython(t, python, c.lib, cfg.Addr, cfg.User, cfg.Passwd, name)
			if want := `{"ok": ["count(*)", "40+2", "lower('A')", "abc", "one"], "probe": "names"}`; direct["names"] != want {
				t.Fatalf("MariaDB itself: %s, want %s", direct["names"], want)
			}
			if onDuckDB["names"] != direct["names"] {
				t.Errorf("on DuckDB %s, MariaDB %s", onDuckDB["names"], direct["names"])
			}
		})
	}
}

// TestNamedLockReleasedOnDisconnect: GET_LOCK through the proxy holds the lock for the client
// that took it (another client cannot take it; the holder's later statements still hold it)
// and the lock is released when that client disconnects.
func TestNamedLockReleasedOnDisconnect(t *testing.T) {
	f := coreServer(t, coreSetup{})
	lock := "qf_lock_" + f.dbName
	holder := openDB(t, f.addr, testUser, "", f.dbName, "")
	holder.SetMaxIdleConns(0)
	conn, err := holder.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := conn.QueryRowContext(context.Background(), "SELECT GET_LOCK(?, 0)", lock).Scan(&got); err != nil || got != 1 {
		t.Fatalf("GET_LOCK: %d, %v", got, err)
	}
	if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&got); err != nil {
		t.Fatal(err)
	}
	other := openDB(t, f.addr, testUser, "", f.dbName, "")
	if err := other.QueryRow("SELECT GET_LOCK(?, 0)", lock).Scan(&got); err != nil || got != 0 {
		t.Fatalf("another client's GET_LOCK: %d, %v (want 0: the lock is held)", got, err)
	}
	if err := conn.QueryRowContext(context.Background(), "SELECT IS_USED_LOCK(?) IS NOT NULL", lock).Scan(&got); err != nil || got != 1 {
		t.Fatalf("the holder's lock: %d, %v", got, err)
	}
	conn.Raw(func(c any) error { return driverClose(c) }) // the client goes away without COM_QUIT's courtesy
	conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := f.direct.QueryRow("SELECT IS_FREE_LOCK(?)", lock).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock is still held 10s after its client disconnected")
		}
		time.Sleep(20 * time.Millisecond) // polling the engine for the release: no event to wait on
	}
}

// driverClose closes a go-sql-driver connection's socket.
func driverClose(c any) error {
	if cl, ok := c.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// TestMysqlslapOnDuckDB: mysqlslap's load (concurrent clients logging in to its schema) runs on
// the embedded engine behind a real core. mysqlslap creates its schema only for a --create
// statement: without one its clients' logins name a database that must exist (MariaDB refuses
// one that does not, 1049, and so does the proxy), here the engine's own. (A schema DuckDB
// creates for CREATE SCHEMA is not a database a MySQL client can log in to or USE.)
func TestMysqlslapOnDuckDB(t *testing.T) {
	slap, err := exec.LookPath("mysqlslap")
	if err != nil {
		if slap, err = exec.LookPath("mariadb-slap"); err != nil {
			t.Skip("mysqlslap not installed")
		}
	}
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f := serveCore(t, "duck", eng, coreSetup{})
	host, port, _ := net.SplitHostPort(f.addr)
	out, err := exec.Command(slap, "-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", testUser,
		"--create-schema=duck", "--query=select 40+2", "--concurrency=4", "--iterations=2",
		"--number-of-queries=40").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Average number of seconds to run all queries") {
		t.Fatalf("mysqlslap: %v\n%s", err, out)
	}
	if n := len(f.hist.Find("select 40+2")); n < 80 {
		t.Fatalf("the core ran %d of mysqlslap's queries, want at least 80 (40 queries, 2 iterations)", n)
	}
}

package mysqlwire

import (
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// listFields runs testdata/list_fields.py (libmariadb's mysql_list_fields) against addr: the
// JSON line of each call, by call.
func listFields(t *testing.T, addr, user, password, db string, calls ...string) map[string]string {
	t.Helper()
	python := frontendtest.PythonWith(t, "ctypes")
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(python, append([]string{"testdata/list_fields.py", host, port, user, password, db}, calls...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("list_fields.py against %s: %v\n%s", addr, err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var c struct {
			Call string `json:"call"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("list_fields.py output %q: %v", line, err)
		}
		got[c.Call] = line
	}
	return got
}

// TestFieldListAsMariaDB: MariaDB's C client library's mysql_list_fields (COM_FIELD_LIST, which
// the mariadb CLI's completion sends for each table) gets through the proxy, on the relay, what
// it gets from MariaDB itself: every column's definition and default value, only those whose
// names match a pattern, MariaDB's error for a table that is not there, and a connection that
// goes on. With settings.passthrough: false the columns are there, by name, described as that
// path describes a result's.
func TestFieldListAsMariaDB(t *testing.T) {
	f := coreServer(t, coreSetup{})
	if _, err := f.direct.Exec(`CREATE TABLE lf (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20) NOT NULL DEFAULT 'x',
		price DECIMAL(8,2) DEFAULT 1.50, created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, note TEXT, j JSON, nick CHAR(3))`); err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(mytest.ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	calls := []string{"lf", "lf:n%", "lf:_d", "LF:PRICE", "lf:nothing%", "nope"}
	direct := listFields(t, cfg.Addr, cfg.User, cfg.Passwd, f.dbName, calls...)
	if !strings.Contains(direct["lf"], `"price"`) || !strings.Contains(direct["nope"], "1146") {
		t.Fatalf("MariaDB itself: %v", direct)
	}
	proxied := listFields(t, f.addr, testUser, "", f.dbName, calls...)
	for call, want := range direct {
		if got := proxied[call]; got != want {
			t.Errorf("%s:\n proxy  %s\n direct %s", call, got, want)
		}
	}
	arrow := coreServer(t, coreSetup{noPassthrough: true})
	if _, err := arrow.direct.Exec("CREATE TABLE lf (id INT PRIMARY KEY, name VARCHAR(20), nick CHAR(3))"); err != nil {
		t.Fatal(err)
	}
	onArrow := listFields(t, arrow.addr, testUser, "", arrow.dbName, "lf", "lf:n%", "nope")
	for call, want := range map[string]string{"lf": "id name nick", "lf:n%": "name nick", "nope": "error"} {
		if got := fieldNames(t, onArrow[call]); got != want {
			t.Errorf("passthrough false, %s: %s, want %s", call, onArrow[call], want)
		}
	}
	if !strings.Contains(onArrow["after"], `"ok": true`) {
		t.Errorf("passthrough false: after the field lists: %s", onArrow["after"])
	}
}

// fieldNames is the names of a list_fields.py call's fields, or "error".
func fieldNames(t *testing.T, line string) string {
	t.Helper()
	var c struct {
		Fields [][]any `json:"fields"`
		Error  []any   `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &c); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if c.Error != nil {
		return "error"
	}
	names := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		names[i], _ = f[0].(string)
	}
	return strings.Join(names, " ")
}

package mysqlwire

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestCursorsAsMariaDB: a client that asks for a server-side cursor (libmariadb's
// STMT_ATTR_CURSOR_TYPE, the cursor flag of COM_STMT_EXECUTE, then COM_STMT_FETCH of two rows
// or one at a time) reads through the proxy what it reads from MariaDB: every row, a cursor
// closed after three, no rows, an error, the connection serving on (cursor.go; before, the
// proxy opened none and libmariadb's fallback failed 2014, commands out of sync). PyMySQL's
// and mysqlclient's SSCursor (rows read as they are fetched, the rest dropped at close)
// alike. On the relay and the Arrow path.
func TestCursorsAsMariaDB(t *testing.T) {
	fronts := []*coreFixture{coreServer(t, coreSetup{}), coreServer(t, coreSetup{noPassthrough: true})}
	for _, lib := range []string{"libmariadb", "pymysql", "mysqldb"} {
		module := map[string]string{"libmariadb": "MySQLdb", "pymysql": "pymysql", "mysqldb": "MySQLdb"}[lib]
		python := frontendtest.PythonWith(t, module)
		for i, f := range fronts {
			for _, q := range []string{"DROP TABLE IF EXISTS cur", "CREATE TABLE cur (id INT PRIMARY KEY, name VARCHAR(30))",
				"INSERT INTO cur SELECT seq, CONCAT('n', seq) FROM seq_1_to_20"} {
				if _, err := f.direct.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := gomysql.ParseDSN(f.dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := pythonProbes(t, python, "testdata/python_cursors.py", lib, cfg.Addr, cfg.User, cfg.Passwd, f.dbName, nil, nil)
			got := pythonProbes(t, python, "testdata/python_cursors.py", lib, f.addr, testUser, "", f.dbName, nil, nil)
			for name, w := range want {
				if got[name] != w {
					t.Errorf("%s, passthrough %v, %s:\n proxy   %s\n MariaDB %s", lib, i == 0, name, got[name], w)
				}
			}
			if len(want) < 3 || len(got) != len(want) {
				t.Errorf("%s: %d probes from MariaDB, %d through the proxy", lib, len(want), len(got))
			}
		}
	}
}

// TestFetchWithoutACursorAsMariaDB: a COM_STMT_FETCH for a statement that has no open cursor
// (a client that fetches without reading SERVER_STATUS_CURSOR_EXISTS) is answered as MariaDB
// answers it, and the connection serves on.
func TestFetchWithoutACursorAsMariaDB(t *testing.T) {
	f := coreServer(t, coreSetup{})
	cfg, err := gomysql.ParseDSN(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(addr, user, password string) string {
		c, err := client.Connect(addr, user, password, f.dbName)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		st, err := c.Prepare("SELECT 1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Execute(); err != nil {
			t.Fatal(err)
		}
		var out string
		for _, id := range []uint32{st.ID, st.ID + 100} {
			p := make([]byte, 4, 13)
			p = append(p, mysql.COM_STMT_FETCH)
			p = binary.LittleEndian.AppendUint32(p, id)
			p = binary.LittleEndian.AppendUint32(p, 10)
			c.ResetSequence()
			if err := c.WritePacket(p); err != nil {
				t.Fatal(err)
			}
			data, err := c.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintf("%v; ", c.HandleErrorPacket(data))
		}
		r, err := c.Execute("SELECT 2")
		if err != nil {
			return out + err.Error()
		}
		v, _ := r.GetInt(0, 0)
		return out + fmt.Sprint(v)
	}
	ids := regexp.MustCompile(`\(\d+\)`) // statement ids: each server numbers its own
	want := ids.ReplaceAllString(fetch(cfg.Addr, cfg.User, cfg.Passwd), "(id)")
	if got := ids.ReplaceAllString(fetch(f.addr, testUser, ""), "(id)"); got != want {
		t.Errorf("COM_STMT_FETCH without a cursor:\n proxy   %s\n MariaDB %s", got, want)
	}
}

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

// TestCursorFramingAsMariaDB: COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY, then COM_STMT_FETCH
// until fewer rows are left than asked and once past the end, packet by packet as MariaDB
// answers: the end of the metadata marked CURSOR_EXISTS and no index used, each fetch's rows
// and end (CURSOR_EXISTS, then LAST_ROW_SENT when fewer rows were left than asked), then 1421; on the relay and the Arrow path, for a client
// that asks for CLIENT_DEPRECATE_EOF and one that does not. The proxy's greeting offers no
// CLIENT_DEPRECATE_EOF, so its ends are classic EOF packets where MariaDB's are OK packets
// (0xFE): each end is compared by its status and warnings. go-mysql's client asks for
// CLIENT_DEPRECATE_EOF whether offered or not: before, such a client got no cursor (the whole
// result at once).
func TestCursorFramingAsMariaDB(t *testing.T) {
	for _, noPassthrough := range []bool{false, true} {
		f := coreServer(t, coreSetup{noPassthrough: noPassthrough})
		cfg, err := gomysql.ParseDSN(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"CREATE TABLE cf (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO cf VALUES (1, 'a'), (2, 'b'), (3, 'c')"} {
			if _, err := f.direct.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		for _, deprecateEOF := range []bool{false, true} {
			// The Arrow path's results carry no index flags (a known difference, cursor or not).
			indexFlags := map[bool]uint16{true: mysql.SERVER_STATUS_NO_GOOD_INDEX_USED | mysql.SERVER_STATUS_NO_INDEX_USED}[noPassthrough]
			want := cursorPackets(t, cfg.Addr, cfg.User, cfg.Passwd, f.dbName, deprecateEOF, indexFlags)
			got := cursorPackets(t, f.addr, testUser, "", f.dbName, deprecateEOF, indexFlags)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("passthrough %v, CLIENT_DEPRECATE_EOF asked %v:\n proxy   %q\n MariaDB %q", !noPassthrough, deprecateEOF, got, want)
			}
		}
	}
}

// cursorPackets opens a cursor on a three-row SELECT and fetches it two rows at a time, then a
// second one two rows, one, two, and past its end: the packets of each answer, a column definition as "column", an end (EOF, or
// an OK with the EOF header) as its status (without the ignored flags) and warnings.
func cursorPackets(t *testing.T, addr, user, password, db string, deprecateEOF bool, ignored uint16) []string {
	c, err := client.Connect(addr, user, password, db, func(c *client.Conn) error {
		if !deprecateEOF {
			c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Prepare("SELECT id, v FROM cf ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	command := func(p []byte, metadata bool) {
		c.ResetSequence()
		if err := c.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		out = append(out, "|")
		for {
			data, err := c.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case data[0] == mysql.ERR_HEADER:
				out = append(out, fmt.Sprintf("error %d", binary.LittleEndian.Uint16(data[1:])))
				return
			case len(data) > 4 && string(data[:4]) == "\x03def":
				out = append(out, "column") // the Arrow path writes its own definitions
				continue
			case data[0] != mysql.EOF_HEADER || len(data) >= 9:
				out = append(out, fmt.Sprintf("% x", data))
				continue
			case len(data) == 5: // EOF: warnings, status
				out = append(out, fmt.Sprintf("end status %#x warnings %d", binary.LittleEndian.Uint16(data[3:])&^ignored, binary.LittleEndian.Uint16(data[1:])))
			default: // an OK with the EOF header: affected rows and insert id (0, one byte each), status, warnings
				out = append(out, fmt.Sprintf("end status %#x warnings %d", binary.LittleEndian.Uint16(data[3:])&^ignored, binary.LittleEndian.Uint16(data[5:])))
			}
			if !metadata || data[3]&byte(mysql.SERVER_STATUS_CURSOR_EXISTS) != 0 {
				return
			}
			metadata = false // no cursor: the rows and their end follow
		}
	}
	execute := binary.LittleEndian.AppendUint32([]byte{0, 0, 0, 0, mysql.COM_STMT_EXECUTE}, st.ID)
	// Fewer rows left than asked, then (a second cursor) the rows left asked exactly.
	for _, fetches := range [][]uint32{{2, 2, 2}, {2, 1, 2, 2}} {
		command(append(execute, cursorTypeReadOnly, 1, 0, 0, 0), true)
		for _, n := range fetches {
			command(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{0, 0, 0, 0, mysql.COM_STMT_FETCH}, st.ID), n), false)
		}
	}
	return out
}

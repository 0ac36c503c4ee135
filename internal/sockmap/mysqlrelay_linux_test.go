//go:build linux

package sockmap

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/mytest"
)

// answers runs each statement on db (one connection) and writes what it read: every result
// set's rows, or the error.
func answers(t *testing.T, db *sql.DB, stmts []string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []string
	for _, q := range stmts {
		var b strings.Builder
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			out = append(out, "error: "+err.Error())
			continue
		}
		for set := true; set; set = rows.NextResultSet() {
			cols, _ := rows.Columns()
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			for rows.Next() {
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					if len(v.String) > 40 {
						v.String = fmt.Sprintf("%.20s...(%d)", v.String, len(v.String))
					}
					fmt.Fprintf(&b, "%v:%q ", v.Valid, v.String)
				}
				b.WriteString("| ")
			}
			b.WriteString("; ")
		}
		if err := rows.Err(); err != nil {
			b.WriteString("error: " + err.Error())
		}
		rows.Close()
		out = append(out, b.String())
	}
	return out
}

// TestRelayMySQLAgainstMariaDB: go-sql-driver through a relay whose answers are spliced gets
// what it gets from MariaDB directly (rows led by an empty string and by NULL, a 2 MB row,
// errors, no rows, several results of one COM_QUERY, OKs), and each request sees the end of
// the answer before it as MariaDB wrote it (rows, error code, status).
func TestRelayMySQLAgainstMariaDB(t *testing.T) {
	s := resultSplicer(t)
	dsn, _ := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MultiStatements = true
	setup := []string{
		"CREATE TABLE t (i INT, s VARCHAR(20), b LONGTEXT)",
		"INSERT INTO t VALUES (1, '', NULL), (2, NULL, 'x'), (3, 'abc', REPEAT('z', 2000000))",
	}
	stmts := []string{
		"SELECT s, i FROM t ORDER BY i",
		"SELECT i, b FROM t ORDER BY i",
		"SELECT * FROM nosuch",
		"SELECT * FROM t WHERE i > 100",
		"SELECT 1; SELECT 2 UNION SELECT 3; UPDATE t SET i = i",
		"UPDATE t SET s = 'q' WHERE i < 3",
		"SELECT s FROM t ORDER BY i",
	}
	wantRows := []int64{3, 3, 0, 0, 3, 0, 3}
	wantErr := []uint16{0, 0, 1146, 0, 0, 0, 0}

	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	answers(t, direct, setup)
	want := answers(t, direct, stmts)
	answers(t, direct, []string{"UPDATE t SET s = '' WHERE i = 1", "UPDATE t SET s = NULL WHERE i = 2"})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var ends []End
	var reqs []string
	relayed := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			relayed <- err
			return
		}
		defer c.Close()
		e, err := net.Dial("tcp", cfg.Addr)
		if err != nil {
			relayed <- err
			return
		}
		defer e.Close()
		relayed <- RelayMySQL(s, c.(*net.TCPConn), e.(*net.TCPConn), func(pkt []byte, prev End) error {
			mu.Lock()
			defer mu.Unlock()
			ends, reqs = append(ends, prev), append(reqs, string(pkt[4:]))
			return nil
		})
	}()
	rcfg := cfg.Clone()
	rcfg.Addr = l.Addr().String()
	viaRelay, err := sql.Open("mysql", rcfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	viaRelay.SetMaxOpenConns(1)
	got := answers(t, viaRelay, stmts)
	viaRelay.Close() // COM_QUIT: the last answer's end is seen with it
	if err := <-relayed; err != nil {
		t.Fatal(err)
	}
	for i := range stmts {
		if got[i] != want[i] {
			t.Errorf("%s:\n via the splice %s\n directly       %s", stmts[i], got[i], want[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != len(stmts)+1 {
		t.Fatalf("%d requests relayed, want %d statements and a COM_QUIT: %q", len(ends), len(stmts)+1, reqs)
	}
	for i := range stmts {
		e := ends[i+1]
		if e.Seq != uint64(i+1) || e.Rows != wantRows[i] || e.ErrCode != wantErr[i] || e.Lost {
			t.Errorf("%s: end %+v, want end %d with %d rows, error %d", stmts[i], e, i+1, wantRows[i], wantErr[i])
		}
		if e.ErrCode == 0 && e.Status&0x0002 == 0 { // SERVER_STATUS_AUTOCOMMIT
			t.Errorf("%s: status %#x without autocommit", stmts[i], e.Status)
		}
	}
}

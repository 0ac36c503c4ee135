package mysqlwire

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// The added latency of the proxy: SELECT 1 through go-sql-driver straight to MariaDB, and
// through the MySQL wire frontend (→ backend → MySQL engine → MariaDB).
//
//	go test -run '^$' -bench Select1 ./internal/frontend/mysqlwire/

func benchSelect1(b *testing.B, d *sql.DB) {
	d.SetMaxIdleConns(1)
	var n int
	if err := d.QueryRow("SELECT 1").Scan(&n); err != nil { // warm the connection
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
			b.Fatal(err)
		}
	}
}

func BenchmarkSelect1DirectMariaDB(b *testing.B) {
	dsn, _ := mytest.NewDatabase(b)
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchSelect1(b, d)
}

func BenchmarkSelect1ThroughMySQLWire(b *testing.B) {
	eng, _, name := frontendtest.MariaDB(b)
	addr := startServer(b, frontendtest.NewBackend(eng), Options{})
	d := openDB(b, addr, testUser, "", name, "")
	benchSelect1(b, d)
}

// Single-client SELECT 1 through a real proxy core: passthrough, and the Arrow path forced
// (settings.passthrough: false). Compare with BenchmarkSelect1DirectMariaDB.
func BenchmarkSelect1ViaCorePassthrough(b *testing.B) {
	f := coreServer(b, coreSetup{})
	benchSelect1(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

func BenchmarkSelect1ViaCoreArrow(b *testing.B) {
	f := coreServer(b, coreSetup{noPassthrough: true})
	benchSelect1(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

// 1,000 rows of two columns per query through a real proxy core: where skipping the Arrow
// decode and encode shows.
//
//	go test -run '^$' -bench Rows1000 ./internal/frontend/mysqlwire/
func benchRows1000(b *testing.B, d *sql.DB) {
	d.SetMaxIdleConns(1)
	q := "SELECT seq, CONCAT('row-', seq) FROM seq_1_to_1000"
	for i := 0; i < b.N; i++ {
		rows, err := d.Query(q)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		var id int
		var s string
		for rows.Next() {
			if err := rows.Scan(&id, &s); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n != 1000 {
			b.Fatalf("%d rows", n)
		}
	}
}

func BenchmarkRows1000DirectMariaDB(b *testing.B) {
	dsn, _ := mytest.NewDatabase(b)
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchRows1000(b, d)
}

func BenchmarkRows1000ViaCorePassthrough(b *testing.B) {
	f := coreServer(b, coreSetup{})
	benchRows1000(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

func BenchmarkRows1000ViaCoreArrow(b *testing.B) {
	f := coreServer(b, coreSetup{noPassthrough: true})
	benchRows1000(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

// BenchmarkLoopStatement: one client's SELECT 1, relayed on the event loop through a real proxy
// core that keeps no records, the client writing its COM_QUERY and reading the answer by hand
// (rawClient allocates nothing): allocs/op and B/op are the proxy's own per statement.
//
//	go test -run '^$' -bench LoopStatement -benchmem ./internal/frontend/mysqlwire/
func BenchmarkLoopStatement(b *testing.B) {
	f := coreServer(b, coreSetup{noRecords: true})
	c := newRawClient(b, f.addr, f.dbName)
	s := serverOf(b, f.addr)
	q, one := comQuery("SELECT 1"), []byte{1, '1'}
	for range 2 { // the first goes to the loop with the session; the next is the loop's own
		if err := c.query(q, one); err != nil {
			b.Fatal(err)
		}
	}
	before := s.LoopStatements()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.query(q, one); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := s.LoopStatements() - before; n != int64(b.N) {
		b.Fatalf("the event loop relayed %d of %d statements", n, b.N)
	}
}

// rawClient runs text-protocol statements on a logged-in connection by hand: it writes each
// COM_QUERY packet and reads the answer into a buffer it keeps, so that it allocates nothing
// per statement.
type rawClient struct {
	nc  net.Conn
	buf []byte
}

func newRawClient(t testing.TB, addr, db string) *rawClient {
	t.Helper()
	c, err := client.Connect(addr, testUser, "", db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{nc: c.Conn.Conn, buf: make([]byte, 64<<10)}
}

// query writes the COM_QUERY packet q and reads its answer whole: an OK, or a result set up to
// the EOF after its rows (the proxy offers no CLIENT_DEPRECATE_EOF), whose first row's payload
// must be row (nil: any). An ERR, or another first row, is an error.
func (c *rawClient) query(q, row []byte) error {
	if _, err := c.nc.Write(q); err != nil {
		return err
	}
	n, at, packets, eofs := 0, 0, 0, 0
	for {
		if at == n {
			n, at = 0, 0
		} else if n == len(c.buf) {
			n, at = copy(c.buf, c.buf[at:n]), 0
		}
		m, err := c.nc.Read(c.buf[n:])
		if err != nil {
			return err
		}
		n += m
		for n-at >= 4 {
			size := int(c.buf[at]) | int(c.buf[at+1])<<8 | int(c.buf[at+2])<<16
			if n-at < 4+size {
				break
			}
			p := c.buf[at+4 : at+4+size]
			at += 4 + size
			packets++
			switch {
			case len(p) == 0:
				return errors.New("an empty packet")
			case packets == 1 && p[0] == gomysql.OK_HEADER:
				return nil
			case p[0] == gomysql.ERR_HEADER:
				return fmt.Errorf("ERR % x", p)
			case p[0] == gomysql.EOF_HEADER && len(p) < 9:
				if eofs++; eofs == 2 && row != nil {
					return errors.New("no row")
				} else if eofs == 2 {
					return nil
				}
			case eofs == 1 && row != nil:
				if !bytes.Equal(p, row) {
					return fmt.Errorf("row % x, want % x", p, row)
				}
				row = nil
			}
		}
	}
}

package mysqlengine

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// TestQueryRawRowsInRuns: NextRows hands over whole rows as the engine framed them, in
// sequence, every row exactly once (a row over 16 MiB whole, in its several packets), and
// the connection goes back to the pool afterwards.
func TestQueryRawRowsInRuns(t *testing.T) {
	e, _ := openTestEngine(t)
	q, err := e.QueryRaw(context.Background(), &query.Request{SQL: "SELECT seq FROM seq_1_to_5000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Columns()) != 1 || !strings.Contains(string(q.Head()), "seq") {
		t.Fatalf("head %q", q.Head())
	}
	next := 1
	var seq byte
	for first := true; ; first = false {
		rows, ok := q.NextRows()
		if !ok {
			break
		}
		for len(rows) > 0 {
			n := packetLen(rows)
			if !first && rows[3] != seq {
				t.Fatalf("row %d: sequence %d, want %d", next, rows[3], seq)
			}
			first, seq = false, rows[3]+1
			if got := string(rows[5 : 4+n]); got != strconv.Itoa(next) {
				t.Fatalf("row %d: %q", next, got)
			}
			rows, next = rows[4+n:], next+1
		}
	}
	idle := idleConns(e)
	if err := q.Close(); err != nil || next != 5001 {
		t.Fatalf("%d rows, close: %v", next-1, err)
	}
	if idleConns(e) != idle+1 {
		t.Fatal("a result read to its end did not give its connection back")
	}
	testHugeRow(t, e)
}

// testHugeRow: a row over 16 MiB arrives in two packets, handed over together.
func testHugeRow(t *testing.T, e *Engine) {
	q, err := e.QueryRaw(context.Background(), &query.Request{SQL: "SELECT REPEAT('a', 9000000), REPEAT('b', 9000000)"})
	if err != nil {
		t.Fatal(err)
	}
	rows, ok := q.NextRows()
	if !ok || packetLen(rows) != maxPayload || len(rows) != 2*4+2*(9_000_000+4) {
		t.Fatalf("huge row: %v, %d bytes", ok, len(rows))
	}
	if _, ok := q.NextRows(); ok {
		t.Fatal("more than one row")
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestQueryRawCompressed: a connection that negotiated compression is read through
// go-mysql's reader, framed again: the same rows, OKs and errors.
func TestQueryRawCompressed(t *testing.T) {
	e, name := openTestEngine(t)
	e.dialOptions = []client.Option{func(c *client.Conn) error {
		c.SetCapability(mysql.CLIENT_COMPRESS)
		return nil
	}}
	testQueryRaw(t, e, name)
	e.mu.Lock()
	compressed := len(e.idle[0]) > 0 && e.idle[0][0].Compression != mysql.MYSQL_COMPRESS_NONE
	e.mu.Unlock()
	if !compressed {
		t.Fatal("the connection is not compressed")
	}
	q, err := e.QueryRaw(context.Background(), &query.Request{SQL: "SELECT REPEAT('a', 9000000), 'x'"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rawRows(t, q); len(got) != 1 || len(got[0][0]) != 9_000_000 || got[0][1] != "x" {
		t.Fatalf("compressed big row: %d rows", len(got))
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	testHugeRow(t, e)
}

// The relay's engine side alone: a COM_QUERY written, its answer read into runs of rows.
//
//	go test -run '^$' -bench QueryRaw -benchmem ./internal/engine/mysqlengine/
func benchQueryRaw(b *testing.B, sql string, want int) {
	cfg, name := testDatabase(b)
	e, err := Open(Config{Name: "bench", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: name})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	req := &query.Request{SQL: sql}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		q, err := e.QueryRaw(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			rows, ok := q.NextRows()
			if !ok {
				break
			}
			for at := 0; at < len(rows); at += 4 + packetLen(rows[at:]) {
				n++
			}
		}
		if err := q.Close(); err != nil || n != want {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
}

func BenchmarkQueryRawSelect1(b *testing.B) { benchQueryRaw(b, "SELECT 1", 1) }

func BenchmarkQueryRawRows1000(b *testing.B) {
	benchQueryRaw(b, "SELECT seq, CONCAT('row-', seq) FROM seq_1_to_1000", 1000)
}

// TestLoopWarningsFirst: the warnings of a loop connection's statement read before any other
// statement was relayed leave the engine's idea of the server's capabilities as it is: a
// loop connection is opened without CLIENT_DEPRECATE_EOF, the others with it, and a relay
// that took the loop connection's for the engine's expected an EOF after the column
// definitions of the next result (Malformed packet).
func TestLoopWarningsFirst(t *testing.T) {
	e, name := openTestEngine(t)
	ctx := context.Background()
	q := &query.Request{SQL: "SELECT CAST('12x' AS SIGNED) AS n", Database: name}
	lc, err := e.OpenLoopConn(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.c.Execute(q.SQL); err != nil { // what the loop relays
		t.Fatal(err)
	}
	if ws, ok := lc.Warnings(); !ok || len(ws) != 1 {
		t.Fatalf("loop warnings %+v, %v", ws, ok)
	}
	lc.Release(true)
	r, err := e.QueryRaw(ctx, &query.Request{SQL: "SELECT 1 AS one", Database: name})
	if err != nil {
		t.Fatalf("the relay after the loop's warnings: %v", err)
	}
	for _, more := r.NextRows(); more; _, more = r.NextRows() {
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

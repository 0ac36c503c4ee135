package mysqlengine

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// directDB is a go-sql-driver pool on the test's database name, for looking at the server
// beside the engine (its process list).
func directDB(t *testing.T, name string) *sql.DB {
	t.Helper()
	cfg, err := gomysql.ParseDSN(mytest.ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	d, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// queryInts runs q on d and returns its first column.
func queryInts(t *testing.T, d *sql.DB, q string, args ...any) []int64 {
	t.Helper()
	rows, err := d.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// running is how many statements run in d's database, besides the one asking: the engine's.
// (Found by database rather than by text: while a statement runs a stored function, the process
// list shows the function's statement.)
func running(t *testing.T, d *sql.DB) int64 {
	t.Helper()
	return queryInts(t, d, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO IS NOT NULL AND ID <> CONNECTION_ID()")[0]
}

// The two ways a result is read: decoded into Arrow batches (Execute), and relayed as the
// engine's packets (QueryRaw).
var resultPaths = []string{"arrow", "relay"}

// bigResult is a result of about a gigabyte: far more than the socket buffers between the
// server and the engine hold.
const bigResult = "SELECT seq, REPEAT('x', 1000) FROM seq_1_to_1000000"

// midResult starts sql, a result far larger than the socket buffers, on path and reads its
// first rows; it returns once the server no longer sends the rest, which the engine no longer
// reads: the bytes waiting in the engine connection's socket stay the same over three looks
// 50 ms apart (the server is blocked writing; or, on a loaded machine, between two writes: the
// tests' claims hold either way). Close what it returns. (The server's process list is not
// the signal: a look at it may wait for the thread blocked writing until net_write_timeout
// ends the statement, a minute, as seen at load 42-48.)
func midResult(t *testing.T, e *Engine, d *sql.DB, ctx context.Context, path, sql string) io.Closer {
	t.Helper()
	req := &query.Request{SQL: sql}
	var res io.Closer
	var c *client.Conn
	switch path {
	case "arrow":
		rs, err := e.Execute(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Next(ctx); err != nil {
			t.Fatal(err)
		}
		res, c = rs, rs.(*rows).conn
	case "relay":
		q, err := e.QueryRaw(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := q.NextRows(); !ok {
			t.Fatal("no first rows")
		}
		res, c = q, q.conn
	}
	last, same := -1, 0
	for same < 3 {
		time.Sleep(50 * time.Millisecond)
		if n := unread(t, c); n > 0 && n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return res
}

// unread is how many bytes wait unread in c's socket.
func unread(t *testing.T, c *client.Conn) int {
	t.Helper()
	nc := c.Conn.Conn
	if tap, ok := nc.(*okTap); ok { // the Arrow path's, while its statement runs
		nc = tap.Conn
	}
	sc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioErr error
	if err := sc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil || ioErr != nil {
		t.Fatal(err, ioErr)
	}
	return n
}

// kills records how the engine's kills ended their waits.
type kills struct {
	mu   sync.Mutex
	gone []bool
}

func watchKills(e *Engine) *kills {
	k := &kills{}
	e.onKillWaited = func(gone bool) {
		k.mu.Lock()
		k.gone = append(k.gone, gone)
		k.mu.Unlock()
	}
	return k
}

func (k *kills) take() []bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	g := k.gone
	k.gone = nil
	return g
}

// TestEarlyCloseOfAResultStillBeingSent: a result closed after its first rows, while the
// server is blocked writing the rest to a connection nobody reads, is killed, and the kill
// sees the statement end within its wait rather than run into killWaitMax (a KILL QUERY alone
// does not wake a thread blocked writing: the connection is cut, and its write fails); the
// connection is not reused. On the Arrow path and the relay's.
func TestEarlyCloseOfAResultStillBeingSent(t *testing.T) {
	for _, path := range resultPaths {
		t.Run(path, func(t *testing.T) {
			e, name := openTestEngine(t)
			d := directDB(t, name)
			k := watchKills(e)
			res := midResult(t, e, d, context.Background(), path, bigResult)
			_ = res.Close()
			if got := k.take(); len(got) != 1 || !got[0] {
				t.Fatalf("kills and whether each saw its statement end: %v, want [true]", got)
			}
			if n := running(t, d); n != 0 {
				t.Fatalf("the server still runs the statement %d times after Close", n)
			}
			if idleConns(e) != 0 {
				t.Fatal("the connection of an abandoned result went back to the pool")
			}
		})
	}
}

// TestCancelWaitsForTheKilledStatement: a statement cancelled while the server is blocked
// writing its result gives its connection slot back only once the server no longer runs it:
// when Close returns, the process list shows it no more. Each row the statement sends it also
// writes to a table, so once killed it takes a while to end (it rolls those writes back). On
// the Arrow path and the relay's.
func TestCancelWaitsForTheKilledStatement(t *testing.T) {
	for _, path := range resultPaths {
		t.Run(path, func(t *testing.T) {
			e, name := openTestEngine(t)
			d := directDB(t, name)
			for _, stmt := range mytest.RowWriter {
				if _, err := d.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			res := midResult(t, e, d, ctx, path, "SELECT write_row(seq), REPEAT('x', 300) FROM seq_1_to_10000000")
			cancel()
			_ = res.Close()
			if n := running(t, d); n != 0 {
				t.Fatalf("the server still runs the cancelled statement %d times after Close gave its slot back", n)
			}
			if n := queryInts(t, d, "SELECT COUNT(*) FROM written")[0]; n != 0 {
				t.Fatalf("%d rows written by the cancelled statement", n)
			}
		})
	}
}

// TestKillWaitBacksOff: while a killed statement stays in the process list, the kill looks
// again after 5 ms, then twice as long each time up to 100 ms, not every 5 ms.
func TestKillWaitBacksOff(t *testing.T) {
	const listed = 8 // the statement shows in the first 8 looks
	var mu sync.Mutex
	var looks []time.Time
	fake := mytest.NewFake(t, func(sql string) ([][]byte, bool) {
		if !strings.Contains(sql, "PROCESSLIST") {
			return [][]byte{mytest.FakeOK()}, false
		}
		mu.Lock()
		defer mu.Unlock()
		looks = append(looks, time.Now())
		if len(looks) <= listed {
			return mytest.FakeResult("n", "1"), false
		}
		return mytest.FakeResult("n", "0"), false
	})
	e, err := Open(Config{Name: "fake", Addr: fake.Addr, User: mytest.FakeUser})
	if err != nil {
		t.Fatal(err)
	}
	k := watchKills(e)
	if err := e.killQuery(42, nil); err != nil {
		t.Fatal(err)
	}
	if got := k.take(); len(got) != 1 || !got[0] {
		t.Fatalf("the wait ended %v, want [true]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(looks) != listed+1 {
		t.Fatalf("%d looks at the process list, want %d", len(looks), listed+1)
	}
	pause := killPollFirst
	for i := 1; i < len(looks); i++ {
		// A sleep never ends early: each gap is at least the pause before it.
		if gap := looks[i].Sub(looks[i-1]); gap < pause {
			t.Fatalf("look %d came %v after the one before, want at least %v", i, gap, pause)
		}
		pause = min(2*pause, killPollMax)
	}
}

// TestQueryRawErrorThatEndsTheConnection: an ERR a server sends as it closes the connection
// (MariaDB's 1927, connection killed), before the rows or after some, reaches the caller, and
// the dead connection does not go back to the pool: the next statement logs in anew.
func TestQueryRawErrorThatEndsTheConnection(t *testing.T) {
	killed := mytest.FakeError(1927, "70100", "Connection was killed")
	fake := mytest.NewFake(t, func(sql string) ([][]byte, bool) {
		switch sql {
		case "SELECT ends_at_once":
			return [][]byte{killed}, true
		case "SELECT ends_after_rows":
			return append(mytest.FakeColumns("n"), mytest.FakeRow("1"), mytest.FakeRow("2"), killed), true
		case "SELECT 7":
			return mytest.FakeResult("7", "7"), false
		}
		return [][]byte{mytest.FakeOK()}, false
	})
	e, err := Open(Config{Name: "fake", Addr: fake.Addr, User: mytest.FakeUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	selectSeven := func() {
		t.Helper()
		q, err := e.QueryRaw(ctx, &query.Request{SQL: "SELECT 7"})
		if err != nil {
			t.Fatal(err)
		}
		if got := rawRows(t, q); len(got) != 1 || got[0][0] != "7" {
			t.Fatalf("SELECT 7: %q", got)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
	}
	selectSeven()
	for i, sql := range []string{"SELECT ends_at_once", "SELECT ends_after_rows"} {
		q, err := e.QueryRaw(ctx, &query.Request{SQL: sql})
		if err == nil {
			rawRows(t, q)
			err = q.Close()
		}
		var qe *query.Error
		if !errors.As(err, &qe) || !strings.Contains(qe.Message, "(MySQL error 1927)") {
			t.Fatalf("%s: %v, want the server's 1927", sql, err)
		}
		if idleConns(e) != 0 {
			t.Fatalf("%s: the connection the server closed went back to the pool", sql)
		}
		selectSeven()
		if got, want := fake.Logins.Load(), int32(i+2); got != want {
			t.Fatalf("after %s: %d logins, want %d", sql, got, want)
		}
	}
}

// TestKillDroppedBeforeTheStatementIsSentAgain: a kill whose KILL QUERY lands before the server
// read the statement (MariaDB clears the flag as the thread starts its next command: the
// statement then runs to its end) sends KILL QUERY again while the statement has not
// answered, so the statement is stopped: a killed SLEEP answers 1 (or fails with 1317).
func TestKillDroppedBeforeTheStatementIsSentAgain(t *testing.T) {
	e, name := openTestEngine(t)
	d := directDB(t, name)
	ctx := context.Background()
	conn, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id uint32
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	e.onKillSent = func() { close(first) }
	var mu sync.Mutex
	answered := false
	stillPending := func() bool { mu.Lock(); defer mu.Unlock(); return !answered }
	killed := make(chan error, 1)
	go func() { killed <- e.killQuery(id, stillPending) }()
	<-first // the KILL QUERY reached the server while the connection was idle: forgotten
	var v int
	err = conn.QueryRowContext(ctx, "SELECT SLEEP(20)").Scan(&v)
	mu.Lock()
	answered = true
	mu.Unlock()
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	if interrupted := err != nil && strings.Contains(err.Error(), "1317"); !interrupted && (err != nil || v != 1) {
		t.Fatalf("the SLEEP killed before it reached the server answered %d, %v: want it interrupted", v, err)
	}
}

package pgwire_test

import (
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/demo"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// loggedInConn logs in to addr as a trusted user and reads up to ReadyForQuery.
func loggedInConn(t *testing.T, addr string) (net.Conn, *pgproto3.Frontend) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(time.Minute)) // a safety net, not a measure
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "u"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			return nc, fe
		}
	}
}

// fatalOf reads until the server's FATAL and then its close.
func fatalOf(t *testing.T, nc net.Conn, fe *pgproto3.Frontend) *pgproto3.ErrorResponse {
	t.Helper()
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("no FATAL before the connection ended: %v", err)
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			// A client still writing when the server closes gets a reset instead of an end.
			if rest, err := io.ReadAll(nc); err != nil && !errors.Is(err, syscall.ECONNRESET) || len(rest) > 0 {
				t.Fatalf("after the FATAL: %q, %v; want the server's close", rest, err)
			}
			return e
		}
	}
}

// simpleQuery sends sql as a simple Query and reads its answers; it returns its error, if any.
func simpleQuery(t *testing.T, fe *pgproto3.Frontend, sql string) *pgproto3.ErrorResponse {
	t.Helper()
	fe.Send(&pgproto3.Query{String: sql})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	return receiveUntilReady(t, fe)
}

func limitedServer(t *testing.T, limits netlimit.Limits) (string, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	e, err := demo.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	addr := startServer(t, describingEngine{&oneEngine{e: e}}, pgwire.Options{TrustUsers: []string{"*"}, Limits: limits, Registerer: reg})
	return addr, reg
}

// A logged-in client that begins a message and leaves it half sent, or sends it a byte at a
// time, is ended with 08P01 naming the message timeout, counted; a client idle between
// messages is not.
func TestMessageBegunMustArriveWithinTheTimeout(t *testing.T) {
	addr, reg := limitedServer(t, netlimit.Limits{MessageTimeout: 300 * time.Millisecond})
	t.Run("half a message", func(t *testing.T) {
		nc, fe := loggedInConn(t, addr)
		if _, err := nc.Write(append([]byte{'Q', 0, 0, 3, 236}, "select"...)); err != nil { // declares 1000 bytes
			t.Fatal(err)
		}
		e := fatalOf(t, nc, fe)
		if e.Code != "08P01" || !strings.Contains(e.Message, "not received whole within 300ms") {
			t.Fatalf("got %s %s, want 08P01 naming the message timeout", e.Code, e.Message)
		}
	})
	t.Run("half a header", func(t *testing.T) {
		nc, fe := loggedInConn(t, addr)
		if _, err := nc.Write([]byte{'Q', 0}); err != nil {
			t.Fatal(err)
		}
		if e := fatalOf(t, nc, fe); e.Code != "08P01" {
			t.Fatalf("got %s %s, want 08P01", e.Code, e.Message)
		}
	})
	t.Run("a byte at a time", func(t *testing.T) {
		nc, fe := loggedInConn(t, addr)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // the attacker's pace: the header, then a byte every 20 ms, never the whole
			_, _ = nc.Write([]byte{'Q', 0, 1, 0, 0})
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := nc.Write([]byte{'x'}); err != nil {
					return
				}
			}
		}()
		if e := fatalOf(t, nc, fe); e.Code != "08P01" || !strings.Contains(e.Message, "not received whole") {
			t.Fatalf("got %s %s, want 08P01 naming the message timeout", e.Code, e.Message)
		}
	})
	if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "message_timeout")); got != 3 {
		t.Errorf("message_timeout refusals %v, want 3", got)
	}
	t.Run("idle between messages", func(t *testing.T) {
		nc, fe := loggedInConn(t, addr)
		// Idle for longer than the timeout: wait for a message of another connection to
		// time out, which takes the whole timeout.
		other, ofe := loggedInConn(t, addr)
		if _, err := other.Write([]byte{'Q', 0}); err != nil {
			t.Fatal(err)
		}
		fatalOf(t, other, ofe)
		if e := simpleQuery(t, fe, "select 1"); e != nil {
			t.Fatalf("a client idle past the timeout: %s %s", e.Code, e.Message)
		}
		_ = nc
	})
}

// A logged-in client's message over MessageBytesMax ends the connection with 08P01 naming
// both sizes; a large message within it still runs.
func TestMessageBytesMaxAfterLogin(t *testing.T) {
	addr, reg := limitedServer(t, netlimit.Limits{MessageBytesMax: 1 << 20})
	nc, fe := loggedInConn(t, addr)
	if e := simpleQuery(t, fe, "select 1 -- "+strings.Repeat("x", 900<<10)); e != nil {
		t.Fatalf("a message within the limit was refused: %s %s", e.Code, e.Message)
	}
	if _, err := nc.Write([]byte{'Q', 0, 0x20, 0, 0}); err != nil { // 2 MiB
		t.Fatal(err)
	}
	e := fatalOf(t, nc, fe)
	if e.Code != "08P01" || !strings.Contains(e.Message, "larger than the limit of 1048576 bytes") {
		t.Fatalf("got %s %s, want 08P01 naming the limit", e.Code, e.Message)
	}
	if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "message_bytes")); got != 1 {
		t.Errorf("message_bytes refusals %v, want 1", got)
	}
}

// Headers declaring 32 MiB after login cost what was sent, not what was declared: the server
// holds the message until it arrives whole, growing with what arrives.
func TestHostileHeaderAfterLogin(t *testing.T) {
	addr, _ := limitedServer(t, netlimit.Limits{})
	const conns = 20
	conn := make([]net.Conn, conns)
	for i := range conns {
		conn[i], _ = loggedInConn(t, addr)
	}
	before, held := heapInUse(), pgwire.MessagesHeldWhole()
	for _, nc := range conn {
		if _, err := nc.Write(append([]byte{'Q', 2, 0, 0, 0}, make([]byte, 100)...)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); pgwire.MessagesHeldWhole() < held+conns; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d of %d large headers", pgwire.MessagesHeldWhole()-held, conns)
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d headers declaring 32 MiB", grew, conns)
	}
	for _, nc := range conn {
		if err := nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatal(err)
		}
	}
}

// A large message leaves nothing behind with its connection: ten clients each send a 4 MiB
// statement and stay connected, idle; the heap keeps none of the buffers it arrived in.
func TestLargeMessageBufferNotKeptByAnIdleConnection(t *testing.T) {
	addr, _ := limitedServer(t, netlimit.Limits{})
	const conns = 10
	before := heapInUse()
	for range conns {
		_, fe := loggedInConn(t, addr)
		// An aliased column: DuckDB names it without a parse of the 4 MiB (colnames.go).
		if e := simpleQuery(t, fe, "select 1 as one -- "+strings.Repeat("x", 4<<20)); e != nil {
			t.Fatalf("a 4 MiB statement: %s %s", e.Code, e.Message)
		}
	}
	runtime.GC() // pgproto3's buffer pool keeps what it was given for one more cycle
	if grew := int64(heapInUse()) - int64(before); grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d idle connections that each sent one 4 MiB message", grew, conns)
	}
}

// Messages held whole count in the daemon's messages in flight while they are: under a pool of 1 MiB
// a 900 KB statement runs and gives its room back, and a 2 MiB one (within maxMessageBytes)
// ends its connection with 53200, counted, instead of a thousand such messages exhausting the
// host.
func TestMessagesInFlightDrawOnTheDaemonsBudget(t *testing.T) {
	pool := heldmem.NewPool(1 << 20)
	addr, reg := limitedServer(t, netlimit.Limits{InFlight: pool})
	_, fe := loggedInConn(t, addr)
	if e := simpleQuery(t, fe, "select 1 -- "+strings.Repeat("x", 900<<10)); e != nil {
		t.Fatalf("a 900 KB statement under a 1 MiB pool: %s %s", e.Code, e.Message)
	}
	if pool.Used() != 0 {
		t.Fatalf("after the statement the pool holds %d bytes", pool.Used())
	}
	nc, fe := loggedInConn(t, addr)
	// Its header only: a client still writing the body when the server closes gets a reset.
	if _, err := nc.Write(append([]byte{'Q', 0, 0x20, 0, 0}, "select 1 -- "...)); err != nil { // declares 2 MiB
		t.Fatal(err)
	}
	if e := fatalOf(t, nc, fe); e.Code != "53200" || !strings.Contains(e.Message, "out of memory") {
		t.Fatalf("a 2 MiB statement under a 1 MiB pool: %s %s, want 53200", e.Code, e.Message)
	}
	if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "in_flight_bytes")); got != 1 {
		t.Errorf("refusals %v, want 1", got)
	}
	if pool.Used() != 0 {
		t.Fatalf("after the refusal the pool holds %d bytes", pool.Used())
	}
}

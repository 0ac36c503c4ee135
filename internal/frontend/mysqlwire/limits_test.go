package mysqlwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
)

// hostileHeader declares a packet of 16 MiB - 2 bytes and brings 100 of them.
func hostileHeader(seq byte) []byte {
	return append([]byte{0xfe, 0xff, 0xff, seq}, make([]byte, 100)...)
}

// readPacket reads one packet from a raw connection.
func readPacket(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	head := make([]byte, 4)
	if _, err := io.ReadFull(nc, head); err != nil {
		t.Fatalf("reading a packet: %v", err)
	}
	p := make([]byte, packetLen(head))
	if _, err := io.ReadFull(nc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHostileHeaderBeforeLogin: a 4-byte header declaring 16 MiB in place of the handshake
// response ends the connection at once with an error naming the limit; the server keeps
// nothing of the declared size.
func TestHostileHeaderBeforeLogin(t *testing.T) {
	backend := frontendtest.NewBackend(nil)
	addr := startServer(t, backend, Options{})
	const conns = 20
	before := heapInUse()
	for range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		readPacket(t, nc) // greeting
		if _, err := nc.Write(hostileHeader(1)); err != nil {
			t.Fatal(err)
		}
		if p := readPacket(t, nc); p[0] != 0xff || !strings.Contains(string(p), "larger than the limit of 65536 bytes") {
			t.Fatalf("answer %q, want an error naming the limit", p)
		}
		if _, err := io.ReadFull(nc, make([]byte, 1)); err == nil {
			t.Fatal("the connection stayed open")
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d hostile headers", grew, conns)
	}
}

// TestHostileHeaderAfterLogin: after login a 16 MiB packet is allowed, but a header that
// declares one and holds costs the server only the bytes that arrived (it took 16.5 MB a
// connection when the buffer was sized from the header).
func TestHostileHeaderAfterLogin(t *testing.T) {
	backend := frontendtest.NewBackend(nil)
	addr := startServer(t, backend, Options{})
	const conns = 8
	before, started := heapInUse(), largePacketsStarted.Load()
	for range conns {
		c, err := client.Connect(addr, testUser, "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Conn.Conn.Write(hostileHeader(0)); err != nil {
			t.Fatal(err)
		}
	}
	for largePacketsStarted.Load() < started+conns { // every header read by the server
		runtime.Gosched()
	}
	grew := int64(heapInUse()) - int64(before)
	t.Logf("heap +%d KB for %d logged-in connections each holding a 16 MiB header", grew>>10, conns)
	if grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d held 16 MiB headers", grew, conns)
	}
}

// tlsSession greets addr, asks for TLS with an SSLRequest as a client does, and returns the
// TLS connection the handshake response would go on.
func tlsSession(t *testing.T, addr string) *tls.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	readPacket(t, nc) // greeting
	ssl := make([]byte, 4+sslRequestBytes)
	ssl[0], ssl[3] = sslRequestBytes, 1
	binary.LittleEndian.PutUint32(ssl[4:], gomysql.CLIENT_PROTOCOL_41|gomysql.CLIENT_SSL|gomysql.CLIENT_SECURE_CONNECTION|gomysql.CLIENT_PLUGIN_AUTH)
	binary.LittleEndian.PutUint32(ssl[8:], 1<<24)
	ssl[12] = 33
	if _, err := nc.Write(ssl); err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, &tls.Config{InsecureSkipVerify: true})
	_ = tc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	return tc
}

// TestHostileHeaderInsideTLS: inside TLS the pre-login limit holds as on a plain connection
// (go-mysql, when it ran TLS itself, sized its buffer from this header: 16 MiB a connection).
func TestHostileHeaderInsideTLS(t *testing.T) {
	backend := frontendtest.NewBackend(nil)
	addr := startServer(t, backend, Options{TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	const conns = 20
	before := heapInUse()
	for range conns {
		tc := tlsSession(t, addr)
		if _, err := tc.Write(hostileHeader(2)); err != nil {
			t.Fatal(err)
		}
		if p := readPacket(t, tc); p[0] != 0xff || !strings.Contains(string(p), "larger than the limit of 65536 bytes") {
			t.Fatalf("answer %q, want an error naming the limit", p)
		}
		if _, err := io.ReadFull(tc, make([]byte, 1)); err == nil {
			t.Fatal("the connection stayed open")
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d hostile headers inside TLS", grew, conns)
	}
}

// TestHostileHeaderInsideTLSAfterLogin: logged in over TLS, a header declaring 16 MiB costs
// only the bytes that arrived, as on a plain connection.
func TestHostileHeaderInsideTLSAfterLogin(t *testing.T) {
	backend := frontendtest.NewBackend(nil)
	addr := startServer(t, backend, Options{TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	const conns = 8
	before, started := heapInUse(), largePacketsStarted.Load()
	for range conns {
		c, err := client.Connect(addr, "alice", testPassword, "", func(c *client.Conn) error {
			c.UseSSL(true)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, ok := c.Conn.Conn.(*tls.Conn); !ok {
			t.Fatalf("the client is not on TLS: %T", c.Conn.Conn)
		}
		if _, err := c.Conn.Conn.Write(hostileHeader(0)); err != nil {
			t.Fatal(err)
		}
	}
	// Every header read by the server's gate (without it inside TLS, none ever is).
	for deadline := time.Now().Add(time.Minute); largePacketsStarted.Load() < started+conns; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the packet gate saw %d of %d large headers inside TLS", largePacketsStarted.Load()-started, conns)
		}
	}
	grew := int64(heapInUse()) - int64(before)
	t.Logf("heap +%d KB for %d connections on TLS each holding a 16 MiB header", grew>>10, conns)
	if grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d held 16 MiB headers", grew, conns)
	}
}

// TestHandshakeDeadline: a client that connects and says nothing is disconnected at the
// handshake deadline.
func TestHandshakeDeadline(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(nil), Options{Limits: netlimit.Limits{HandshakeTimeout: 100 * time.Millisecond}})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	readPacket(t, nc)
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadAll(nc) // whatever the server says, then its close
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a silent handshake open")
	}
}

// TestConnectionsMax: with ConnectionsMax open, the next client gets MySQL's own "Too many
// connections" (1040); once one closes, a client gets in again.
func TestConnectionsMax(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(nil), Options{Limits: netlimit.Limits{ConnectionsMax: 3}})
	var open []*client.Conn
	for range 3 {
		c, err := client.Connect(addr, testUser, "", "")
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	_, err := client.Connect(addr, testUser, "", "")
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != gomysql.ER_CON_COUNT_ERROR {
		t.Fatalf("fourth connection: %v, want error 1040", err)
	}
	d := openDB(t, addr, testUser, "", "", "")
	var de *mysql.MySQLError
	if err := d.Ping(); !errors.As(err, &de) || de.Number != 1040 || de.Message != "Too many connections" {
		t.Fatalf("go-sql-driver: %v, want error 1040", err)
	}
	open[0].Close()
	for { // the server sees the close, then frees the slot
		c, err := client.Connect(addr, testUser, "", "")
		if err == nil {
			c.Close()
			break
		}
		if !errors.As(err, &me) || me.Code != gomysql.ER_CON_COUNT_ERROR {
			t.Fatal(err)
		}
	}
	for _, c := range open[1:] {
		c.Close()
	}
}

// okEngine answers every statement with an OK and records how long its SQL was.
func okEngine(sqlBytes *atomic.Int64) frontendtest.FuncEngine {
	return func(ctx context.Context, q *query.Request) (query.Rows, error) {
		sqlBytes.Store(int64(len(q.SQL)))
		return frontendtest.NewRecordRows(nil, "DO 0"), nil
	}
}

// loggedInRaw logs in with go-mysql's client and returns it with its socket, for raw packets.
func loggedInRaw(t *testing.T, addr string) (*client.Conn, net.Conn) {
	t.Helper()
	c, err := client.Connect(addr, testUser, "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, c.Conn.Conn
}

// wantRefusal reads the server's last packet and its close: an error packet with seq, errno,
// SQLSTATE 08S01 and MariaDB's message.
func wantRefusal(t *testing.T, nc net.Conn, seq byte, errno uint16, msg string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	head := make([]byte, 4)
	if _, err := io.ReadFull(nc, head); err != nil {
		t.Fatalf("no answer, want error %d: %v", errno, err)
	}
	p := make([]byte, packetLen(head))
	if _, err := io.ReadFull(nc, p); err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0xff, byte(errno), byte(errno >> 8)}, "#08S01"+msg...)
	if head[3] != seq || string(p) != string(want) {
		t.Fatalf("answer seq %d %q, want seq %d %q", head[3], p, seq, want)
	}
	if _, err := io.ReadFull(nc, make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the refusal: %v, want the connection closed", err)
	}
}

// fullPacket is a packet of maxPayload bytes (continued by the next), a COM_QUERY's start when
// seq is 0.
func fullPacket(seq byte) []byte {
	p := make([]byte, 4+maxPayload)
	p[0], p[1], p[2], p[3] = 0xff, 0xff, 0xff, seq
	p[4] = gomysql.COM_QUERY
	copy(p[5:], "SELECT 1 -- ")
	for i := 5 + len("SELECT 1 -- "); i < len(p); i++ {
		p[i] = 'x'
	}
	return p
}

// A logged-in client's message is bounded by max_allowed_packet (MessageBytesMax), which
// @@max_allowed_packet reports, counted over the packets go-mysql joins: the header that
// crosses it is answered with MariaDB's own refusal (1153, 08S01, its message and sequence,
// as 10.11 answers the same bytes) before its body is sent, and the connection ends. A
// message within the limit that spans packets still runs.
func TestMessageOverMaxAllowedPacket(t *testing.T) {
	var sqlBytes atomic.Int64
	reg := prometheus.NewRegistry()
	addr := startServer(t, frontendtest.NewBackend(okEngine(&sqlBytes)), Options{Limits: netlimit.Limits{MessageBytesMax: 20 << 20}, Registerer: reg})
	const tooLarge = "Got a packet bigger than 'max_allowed_packet' bytes"
	t.Run("advertised", func(t *testing.T) {
		var got int64
		if err := openDB(t, addr, testUser, "", "", "").QueryRow("select @@max_allowed_packet").Scan(&got); err != nil || got != 20<<20 {
			t.Fatalf("@@max_allowed_packet %d, %v; want %d", got, err, 20<<20)
		}
	})
	t.Run("within, over two packets", func(t *testing.T) {
		c, _ := loggedInRaw(t, addr)
		sql := "SELECT 1 -- " + strings.Repeat("x", 17<<20)
		if _, err := c.Execute(sql); err != nil {
			t.Fatal(err)
		}
		if sqlBytes.Load() != int64(len(sql)) {
			t.Fatalf("the engine got %d bytes of SQL, want %d", sqlBytes.Load(), len(sql))
		}
	})
	t.Run("one header over", func(t *testing.T) {
		small := startServer(t, frontendtest.NewBackend(okEngine(&sqlBytes)), Options{Limits: netlimit.Limits{MessageBytesMax: 1 << 20}})
		_, nc := loggedInRaw(t, small)
		if _, err := nc.Write([]byte{0, 0, 0x40, 0, gomysql.COM_QUERY}); err != nil { // declares 4 MiB, sends 1 byte
			t.Fatal(err)
		}
		wantRefusal(t, nc, 1, gomysql.ER_NET_PACKET_TOO_LARGE, tooLarge)
	})
	t.Run("the continuation over", func(t *testing.T) {
		_, nc := loggedInRaw(t, addr)
		if _, err := nc.Write(fullPacket(0)); err != nil {
			t.Fatal(err)
		}
		// 16 MiB sent, and a header declaring 8 MiB more (24 MiB in all), of which no byte.
		if _, err := nc.Write([]byte{0, 0, 0x80, 1}); err != nil {
			t.Fatal(err)
		}
		wantRefusal(t, nc, 2, gomysql.ER_NET_PACKET_TOO_LARGE, tooLarge)
		if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("mysqlwire", "message_bytes")); got != 1 {
			t.Errorf("message_bytes refusals %v, want 1", got)
		}
	})
}

// A logged-in client that begins a message and leaves it unfinished is ended after the
// message timeout with MariaDB's ER_NET_READ_INTERRUPTED (1159, 08S01). A client idle between
// messages is not ended. (That the clock spans a message's packets: TestMessageClockSpansPackets.)
func TestMessageTimeout(t *testing.T) {
	var sqlBytes atomic.Int64
	reg := prometheus.NewRegistry()
	addr := startServer(t, frontendtest.NewBackend(okEngine(&sqlBytes)), Options{Limits: netlimit.Limits{MessageTimeout: 300 * time.Millisecond}, Registerer: reg})
	const timedOut = "Got timeout reading communication packets"
	_, idle := loggedInRaw(t, addr)
	cases := []struct {
		name string
		sent []byte
		seq  byte
	}{
		{"half a header", []byte{100, 0}, 1},
		{"half a packet", append([]byte{100, 0, 0, 0, gomysql.COM_QUERY}, "SELECT"...), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, nc := loggedInRaw(t, addr)
			if _, err := nc.Write(tc.sent); err != nil {
				t.Fatal(err)
			}
			wantRefusal(t, nc, tc.seq, gomysql.ER_NET_READ_INTERRUPTED, timedOut)
		})
	}
	if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("mysqlwire", "message_timeout")); got != float64(len(cases)) {
		t.Errorf("message_timeout refusals %v, want %d", got, len(cases))
	}
	t.Run("idle between messages", func(t *testing.T) {
		// idle logged in before the cases above, each of which waited out the timeout.
		if _, err := idle.Write([]byte{1, 0, 0, 0, gomysql.COM_PING}); err != nil {
			t.Fatal(err)
		}
		if p := readPacket(t, idle); p[0] != gomysql.OK_HEADER {
			t.Fatalf("an idle client's ping: %q, want OK", p)
		}
	})
}

// A message one byte over max_allowed_packet, spread over packets as a client sends one, is
// answered by this server with the very bytes MariaDB answers it with (an error packet, then
// the close), both configured with MariaDB's own max_allowed_packet.
func TestOversizeMessageAnsweredAsMariaDB(t *testing.T) {
	dsn, _ := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var limit int
	if err := db.QueryRow("select @@max_allowed_packet").Scan(&limit); err != nil {
		t.Fatal(err)
	}
	if limit > 64<<20 {
		t.Skipf("MariaDB's max_allowed_packet is %d bytes: too much to send in a test", limit)
	}
	addr := startServer(t, frontendtest.NewBackend(nil), Options{Limits: netlimit.Limits{MessageBytesMax: limit}})
	ours := oversizeAnswer(t, addr, testUser, "", limit)
	theirs := oversizeAnswer(t, cfg.Addr, cfg.User, cfg.Passwd, limit)
	if !bytes.Equal(ours, theirs) {
		t.Fatalf("answer %q, MariaDB's %q", ours, theirs)
	}
	if !bytes.Contains(ours, []byte("#08S01Got a packet bigger than 'max_allowed_packet' bytes")) {
		t.Fatalf("answer %q, want MariaDB's 1153", ours)
	}
}

// oversizeAnswer logs in to addr, sends full packets up to limit and then a header taking the
// message one byte past it (no body), and returns all the server sends before it closes.
func oversizeAnswer(t *testing.T, addr, user, password string, limit int) []byte {
	t.Helper()
	c, err := client.Connect(addr, user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc := c.Conn.Conn
	full := limit / maxPayload
	for seq := range full {
		if _, err := nc.Write(fullPacket(byte(seq))); err != nil {
			t.Fatal(err)
		}
	}
	rest := limit - full*maxPayload + 1
	if _, err := nc.Write([]byte{byte(rest), byte(rest >> 8), byte(rest >> 16), byte(full)}); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	answer, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("%s: %v after %q, want the connection closed", addr, err, answer)
	}
	return answer
}

// The message clock, once a read had to wait for more of a message, runs until the message's
// last packet was handed on: not stopped at the end of a 16 MiB - 1 packet that the next one
// continues. (End to end this would need 16 MiB sent within a short timeout: a loaded machine
// cannot promise that.)
func TestMessageClockSpansPackets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	g := newPacketGate(server, netlimit.Limits{}.WithDefaults(), nil, slog.New(slog.DiscardHandler))
	g.loggedIn()
	defer g.stop()
	sent := make(chan error, 1)
	go func() {
		_, err := client.Write(append(fullPacket(0), 1, 0, 0, 1, 'x'))
		sent <- err
	}()
	if _, err := io.ReadFull(g, make([]byte, 4+maxPayload)); err != nil {
		t.Fatal(err)
	}
	if !g.inMessage || !g.timed {
		t.Fatalf("after a continued packet: in message %v, clock running %v; want both", g.inMessage, g.timed)
	}
	if _, err := io.ReadFull(g, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	if g.inMessage || g.timed || g.msg.Expired() {
		t.Fatalf("after the message's last packet: in message %v, clock running %v, expired %v; want none", g.inMessage, g.timed, g.msg.Expired())
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

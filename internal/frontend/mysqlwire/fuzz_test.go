package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// packet frames payload as one MySQL packet with sequence number seq.
func packet(seq byte, payload []byte) []byte {
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(payload)))
	h[3] = seq
	return append(h[:], payload...)
}

// handshakeResponse is a protocol-41 login of user with an empty password.
func handshakeResponse(user string) []byte {
	caps := uint32(mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
		mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_TRANSACTIONS)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, caps)
	binary.Write(&b, binary.LittleEndian, uint32(1<<24))
	b.WriteByte(45)
	b.Write(make([]byte, 23))
	b.WriteString(user)
	b.WriteByte(0)
	b.WriteByte(0) // empty auth response
	b.WriteString(mysql.AUTH_NATIVE_PASSWORD)
	b.WriteByte(0)
	return b.Bytes()
}

// FuzzMySQLPackets logs in, then sends arbitrary bytes as the client's packet stream and hangs
// up. Every command in the stream is served (the client reads the answers until the server
// closes), and the server must neither panic (a recovered panic ends only the connection, but
// is a bug all the same) nor hang.
func FuzzMySQLPackets(f *testing.F) {
	prepare := packet(0, []byte{mysql.COM_STMT_PREPARE, 's', 'e', 'l', 'e', 'c', 't', ' ', '?'})
	f.Add([]byte{})
	f.Add(packet(0, []byte{mysql.COM_QUERY, 's', 'e', 'l', 'e', 'c', 't', ' ', '1'}))
	f.Add(packet(0, []byte{}))                                   // empty command packet
	f.Add(packet(0, []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0})) // unknown statement, short
	f.Add(packet(0, []byte{mysql.COM_STMT_PREPARE, '?', ',', '?'}))
	f.Add(append(packet(0, []byte{mysql.COM_STMT_PREPARE, '?'}), packet(0, []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfe, 0, 0xfc, 0xff, 0xff})...))
	f.Add([]byte{0xff, 0xff, 0xff, 0, 3})
	f.Add(packet(0, []byte{mysql.COM_INIT_DB, 'x'}))
	f.Add(packet(0, []byte{mysql.COM_FIELD_LIST}))
	f.Add(packet(0, []byte{0xee, 1, 2, 3}))
	// Every command the session dispatches, on a prepared statement where it takes one.
	for _, cmd := range [][]byte{
		{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, mysql.MYSQL_TYPE_LONGLONG, 0, 1, 0, 0, 0, 0, 0, 0, 0},
		{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, mysql.MYSQL_TYPE_NULL, 0},
		{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, mysql.MYSQL_TYPE_DATETIME, 0, 7, 0xe8, 7, 2, 29, 1, 2, 3},
		{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, mysql.MYSQL_TYPE_TIME, 0, 8, 1, 1, 0, 0, 0, 2, 3, 4},
		{mysql.COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 0, 0, 'a', 'b'},
		{mysql.COM_STMT_RESET, 1, 0, 0, 0},
		{mysql.COM_STMT_CLOSE, 1, 0, 0, 0},
		{mysql.COM_SET_OPTION, 0, 0},
		{mysql.COM_RESET_CONNECTION},
		{mysql.COM_PING},
		{mysql.COM_CHANGE_USER, 'q', 0, 0, 0},
	} {
		f.Add(append(append([]byte{}, prepare...), packet(0, cmd)...))
	}
	f.Add(append(packet(0, []byte{mysql.COM_SET_OPTION, 0, 0}), packet(0, append([]byte{mysql.COM_QUERY}, "select 1; select 2"...))...))
	addr := startServer(f, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	s := serverOf(f, addr)
	f.Fuzz(func(t *testing.T, stream []byte) {
		before := s.panics.Load() // converse returns once the server closed: its panics are counted
		converse(t, addr, append(packet(1, handshakeResponse(testUser)), stream...))
		if n := s.panics.Load() - before; n != 0 {
			t.Fatalf("a connection panicked %d times on %x: %v", n, stream, s.lastPanic.Load())
		}
	})
}

// converse sends sent to the server at addr and hangs up its sending side, as a client that
// sent those bytes and closed would: the server reads them all, then EOF. It returns what the
// server wrote until it closed the connection, and fails t if the server did not close.
func converse(t testing.TB, addr string, sent []byte) []byte {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // only to report a hang, never reached otherwise
	got := make(chan []byte)
	var readErr error
	go func() {
		b, err := io.ReadAll(c)
		readErr = err
		got <- b
	}()
	c.Write(sent) // fails if the server closed first, which it may
	c.(*net.TCPConn).CloseWrite()
	out := <-got
	if errors.Is(readErr, os.ErrDeadlineExceeded) {
		t.Fatalf("the server still holds the connection 10 s after the client hung up (sent %x)", sent)
	}
	return out
}

// TestFuzzHarnessLogsIn checks the fuzz harness gets past the handshake, so fuzzing reaches
// command decoding, serves the commands after the first, and that an empty command packet ends
// only its own connection.
func TestFuzzHarnessLogsIn(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	addr := startServer(t, backend, Options{})
	for _, stream := range [][]byte{
		packet(0, []byte{}), // go-mysql indexes data[0]: the connection must end, not the process
		append(packet(0, []byte{mysql.COM_PING}), packet(0, []byte{mysql.COM_QUERY, 'x'})...),
	} {
		converse(t, addr, append(packet(1, handshakeResponse(testUser)), stream...))
	}
	if rs := backend.Requests(); len(rs) != 1 || rs[0].SQL != "x" || rs[0].User != testUser {
		t.Fatalf("requests %+v", rs)
	}
}

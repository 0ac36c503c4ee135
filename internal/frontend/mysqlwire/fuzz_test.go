package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
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

// FuzzMySQLPackets logs in, then sends arbitrary bytes as the client's packet stream. The
// connection may end, but the server must neither crash nor hang, and must still serve a
// fresh connection afterwards.
func FuzzMySQLPackets(f *testing.F) {
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
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{LoopbackUser: "queryflux"})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, stream []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		s.wg.Add(1)
		go func() {
			defer close(done)
			s.serveConn(&loopConn{server})
		}()
		go io.Copy(io.Discard, client) // the server's answers
		client.SetDeadline(time.Now().Add(5 * time.Second))
		client.Write(packet(1, handshakeResponse("queryflux")))
		client.Write(stream)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("server connection still running after the client left (input %x)", stream)
		}
	})
}

// loopConn reports a loopback peer, so the no-password login applies over a pipe.
type loopConn struct{ net.Conn }

func (loopConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// TestFuzzHarnessLogsIn checks the fuzz harness gets past the handshake, so fuzzing reaches
// command decoding, and that an empty command packet ends only its own connection.
func TestFuzzHarnessLogsIn(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	s, err := NewServer(backend, Options{LoopbackUser: "queryflux"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, stream := range [][]byte{
		packet(0, []byte{}), // go-mysql indexes data[0]: the connection must end, not the process
		packet(0, []byte{mysql.COM_QUERY, 'x'}),
	} {
		client, server := net.Pipe()
		s.wg.Add(1)
		done := make(chan struct{})
		go func() { defer close(done); s.serveConn(&loopConn{server}) }()
		go io.Copy(io.Discard, client)
		client.Write(packet(1, handshakeResponse("queryflux")))
		client.Write(stream)
		time.Sleep(50 * time.Millisecond)
		client.Close()
		<-done
	}
	if rs := backend.Requests(); len(rs) != 1 || rs[0].SQL != "x" || rs[0].User != "queryflux" {
		t.Fatalf("requests %+v", rs)
	}
}

package mytest

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// Fake is a MySQL-protocol server on a loopback port for what a real one cannot be made to do
// on cue (an error that ends the connection, before its rows or after some): it logs in
// FakeUser without a password and answers each COM_QUERY with the packets its answer returns
// for the SQL (their payloads; the fake numbers them), then, when told to hang up, closes the
// connection. Its greeting offers neither CLIENT_DEPRECATE_EOF nor query attributes, so result
// sets end with EOF packets.
type Fake struct {
	Addr   string
	Logins atomic.Int32 // connections that logged in

	mu    sync.Mutex
	conns []net.Conn
}

// FakeUser is the user a Fake logs in.
const FakeUser = "fake"

// FakeAnswer answers one COM_QUERY: the payloads of the packets to send, and whether to close
// the connection after them.
type FakeAnswer func(sql string) (payloads [][]byte, hangUp bool)

// NewFake serves answer until t ends.
func NewFake(t testing.TB, answer FakeAnswer) *Fake {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &Fake{Addr: l.Addr().String()}
	t.Cleanup(func() {
		l.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, c)
			f.mu.Unlock()
			go f.serve(c, answer)
		}
	}()
	return f
}

// serve logs c in and answers its queries until it quits, fails or is hung up on.
func (f *Fake) serve(c net.Conn, answer FakeAnswer) {
	defer c.Close()
	conn, err := server.NewConn(c, FakeUser, "", server.EmptyHandler{})
	if err != nil {
		return
	}
	f.Logins.Add(1)
	for {
		conn.ResetSequence()
		data, err := conn.ReadPacket()
		if err != nil || len(data) == 0 || data[0] == mysql.COM_QUIT {
			return
		}
		payloads, hangUp := [][]byte{FakeOK()}, false
		if data[0] == mysql.COM_QUERY {
			payloads, hangUp = answer(string(data[1:]))
		}
		for _, p := range payloads {
			if conn.WritePacket(append(make([]byte, 4, 4+len(p)), p...)) != nil {
				return
			}
		}
		if hangUp {
			return
		}
	}
}

// fakeStatus is the server status the fake's OK and EOF packets carry: autocommit.
const fakeStatus = byte(mysql.SERVER_STATUS_AUTOCOMMIT)

// FakeOK is an OK packet: no rows affected.
func FakeOK() []byte { return []byte{mysql.OK_HEADER, 0, 0, fakeStatus, 0, 0, 0} }

// FakeEOF is the EOF packet that ends column definitions and rows.
func FakeEOF() []byte { return []byte{mysql.EOF_HEADER, 0, 0, fakeStatus, 0} }

// FakeError is an ERR packet.
func FakeError(code uint16, state, message string) []byte {
	p := binary.LittleEndian.AppendUint16([]byte{mysql.ERR_HEADER}, code)
	return append(append(append(p, '#'), state...), message...)
}

// FakeColumns are the packets that start a result set of text columns: the column count, the
// definitions and their EOF.
func FakeColumns(names ...string) [][]byte {
	out := [][]byte{mysql.PutLengthEncodedInt(uint64(len(names)))}
	for _, n := range names {
		f := &mysql.Field{Name: []byte(n), Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: 33, ColumnLength: 255}
		out = append(out, f.Dump())
	}
	return append(out, FakeEOF())
}

// FakeRow is one text row.
func FakeRow(values ...string) []byte {
	var p []byte
	for _, v := range values {
		p = append(p, mysql.PutLengthEncodedString([]byte(v))...)
	}
	return p
}

// FakeResult is a whole result set of one column.
func FakeResult(column string, values ...string) [][]byte {
	out := FakeColumns(column)
	for _, v := range values {
		out = append(out, FakeRow(v))
	}
	return append(out, FakeEOF())
}

package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// commandPhase logs in to the server at addr, sends each command as its own packet, then
// COM_QUIT, and returns the payloads of every packet the server wrote.
func commandPhase(t *testing.T, addr string, cmds ...[]byte) [][]byte {
	sent := packet(1, handshakeResponse(testUser))
	for _, c := range append(cmds, []byte{mysql.COM_QUIT}) {
		sent = append(sent, packet(0, c)...)
	}
	var payloads [][]byte
	for b := converse(t, addr, sent); len(b) >= 4 && len(b) >= 4+packetLen(b); b = b[4+packetLen(b):] {
		payloads = append(payloads, b[4:4+packetLen(b)])
	}
	return payloads
}

// execute is a COM_STMT_EXECUTE of statement 1 with one parameter of type typ: not NULL,
// types bound, then value as the parameter's bytes.
func execute(typ byte, value ...byte) []byte {
	p := []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, typ, 0}
	return append(p, value...)
}

// longData is a COM_STMT_SEND_LONG_DATA of chunk for statement 1's first parameter.
func longData(chunk ...byte) []byte {
	return append([]byte{mysql.COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 0, 0}, chunk...)
}

// TestMalformedExecuteParametersAreRefused: an execute whose parameter runs past the packet,
// has a cut or NULL length, or long data the type cannot hold is answered with 1210 naming the
// parameter and what was wrong, and the session goes on (a PING after it is answered). Cut
// lengths once panicked in go-mysql's LengthEncodedInt, fixed-width long data in decodeParam.
func TestMalformedExecuteParametersAreRefused(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	s := serverOf(t, addr)
	prepare := append([]byte{mysql.COM_STMT_PREPARE}, "select ?"...)
	cases := []struct {
		name string
		want string
		cmds [][]byte
	}{
		{"length cut short", "its length is cut short", [][]byte{execute(mysql.MYSQL_TYPE_VAR_STRING, 0xfc, 1)}},
		{"eight-byte length cut short", "its length is cut short", [][]byte{execute(mysql.MYSQL_TYPE_BLOB, 0xfe, 1, 2, 3)}},
		{"length 0xff", "its length starts with 0xff, which is not a length-encoded integer", [][]byte{execute(mysql.MYSQL_TYPE_STRING, 0xff, 1, 2)}},
		{"NULL length", "its length is NULL", [][]byte{execute(mysql.MYSQL_TYPE_VAR_STRING, 0xfb)}},
		{"value missing", "its value is missing", [][]byte{execute(mysql.MYSQL_TYPE_VAR_STRING)}},
		{"length past the end", "its length of 5 bytes runs past the end of the packet (1 bytes left)", [][]byte{execute(mysql.MYSQL_TYPE_VAR_STRING, 5, 'a')}},
		{"fixed width cut", "its 8-byte value runs past the end of the packet (3 bytes left)", [][]byte{execute(mysql.MYSQL_TYPE_LONGLONG, 1, 2, 3)}},
		{"unknown type", "unknown type 32", [][]byte{execute(32, 1, 'a')}},
		{"short long data for a LONGLONG", "3 bytes of long data for a type of 8 bytes", [][]byte{longData(1, 2, 3), execute(mysql.MYSQL_TYPE_LONGLONG)}},
		{"empty long data for a TINY", "0 bytes of long data for a type of 1 bytes", [][]byte{longData(), execute(mysql.MYSQL_TYPE_TINY)}},
		{"long data for an unknown type", "unknown type 32", [][]byte{longData('a'), execute(32)}},
	}
	for _, c := range cases {
		cmds := append([][]byte{prepare}, c.cmds...)
		out := commandPhase(t, addr, append(cmds, []byte{mysql.COM_PING})...)
		var errs []string
		for _, p := range out {
			if len(p) > 9 && p[0] == 0xff {
				errs = append(errs, string(p[9:]))
				if code := binary.LittleEndian.Uint16(p[1:]); code != mysql.ER_WRONG_ARGUMENTS {
					t.Errorf("%s: error %d, want %d", c.name, code, mysql.ER_WRONG_ARGUMENTS)
				}
			}
		}
		want := "Incorrect arguments to mysqld_stmt_execute: parameter 1: " + c.want
		if len(errs) != 1 || !strings.HasPrefix(errs[0], want) {
			t.Errorf("%s: errors %q, want [%q]", c.name, errs, want)
		}
		if last := out[len(out)-1]; last[0] != mysql.OK_HEADER {
			t.Errorf("%s: the PING after the refusal was answered %x, want OK", c.name, last)
		}
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%s: %d panics: %v", c.name, n, s.lastPanic.Load())
		}
	}
}

// TestWellFormedExecuteParametersBind: the checks accept what clients send, long data for a
// string parameter and a fixed-width parameter sent as long data of its own width included.
func TestWellFormedExecuteParametersBind(t *testing.T) {
	header := []byte{0, 1, 0, 0, 0, 0, 1, mysql.MYSQL_TYPE_VAR_STRING, 0, mysql.MYSQL_TYPE_LONGLONG, 0, mysql.MYSQL_TYPE_BLOB, 0}
	hi := []byte{0xfc, 2, 0, 'h', 'i'}
	st := &prepared{params: 3, long: map[int][]byte{2: []byte("long")}}
	bin, err := st.bind(slices.Concat(header, hi, []byte{42, 0, 0, 0, 0, 0, 0, 0}))
	if err != nil || bin.args[0] != "hi" || bin.args[1] != int64(42) || !bytes.Equal(bin.args[2].([]byte), []byte("long")) {
		t.Fatalf("long data for a BLOB: %#v, %v", bin, err)
	}
	st.long = map[int][]byte{1: {7, 0, 0, 0, 0, 0, 0, 0}}
	bin, err = st.bind(slices.Concat(header, hi, []byte{4, 'b', 'l', 'o', 'b'}))
	if err != nil || bin.args[1] != int64(7) || !bytes.Equal(bin.args[2].([]byte), []byte("blob")) {
		t.Fatalf("an eight-byte LONGLONG as long data: %#v, %v", bin, err)
	}
}

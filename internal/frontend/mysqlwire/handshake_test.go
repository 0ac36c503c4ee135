package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// response is a HandshakeResponse41: the fixed part with caps (PROTOCOL_41 and
// SECURE_CONNECTION always), then rest as the fields that follow it, verbatim.
func response(caps uint32, rest ...[]byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, caps|mysql.CLIENT_PROTOCOL_41|mysql.CLIENT_SECURE_CONNECTION)
	binary.Write(&b, binary.LittleEndian, uint32(1<<24))
	b.WriteByte(45)
	b.Write(make([]byte, 23))
	for _, r := range rest {
		b.Write(r)
	}
	return b.Bytes()
}

func nul(s string) []byte { return append([]byte(s), 0) }

// TestMalformedHandshakeResponseIsBadHandshake: a handshake response whose fields run past
// its end is refused with MySQL's ER_HANDSHAKE_ERROR (1043, 08S01) naming the field, on both
// auth methods, and never reaches go-mysql's parser (which slices by the declared lengths:
// an auth length past the end once read the buffer's spare capacity and then panicked).
func TestMalformedHandshakeResponseIsBadHandshake(t *testing.T) {
	plugin := nul(mysql.AUTH_NATIVE_PASSWORD)
	attrs := uint32(mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_CONNECT_ATTRS)
	cases := []struct {
		name, want string
		payload    []byte
	}{
		{"shorter than the fixed part", "shorter than its 32-byte fixed part", response(0)[:20]},
		{"user name without NUL", "user name is not NUL-terminated", response(0, []byte("trusted"))},
		{"auth length past the end", "auth response runs past the end", response(0, nul("trusted"), []byte{10, 1, 2})},
		{"auth length with nothing after the user", "auth response runs past the end", response(0, nul("trusted"))},
		{"lenenc auth past the end", "auth response runs past the end",
			response(mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA, nul("trusted"), []byte{0xfc, 0xff, 0x00, 1, 2})},
		{"lenenc auth length cut", "auth response's length is missing or cut short",
			response(mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA, nul("trusted"), []byte{0xfe, 1, 2})},
		{"database without NUL", "database name is not NUL-terminated",
			response(mysql.CLIENT_CONNECT_WITH_DB, nul("trusted"), []byte{0}, []byte("db"))},
		{"plugin without NUL", "auth plugin name is not NUL-terminated",
			response(mysql.CLIENT_PLUGIN_AUTH, nul("trusted"), []byte{0}, []byte("mysql_native"))},
		{"attributes longer than the packet", "connection attributes run past the end",
			response(attrs, nul("trusted"), []byte{0}, plugin, []byte{50, 1, 'a'})},
		{"attribute cut short", "connection attribute runs past the end",
			response(attrs, nul("trusted"), []byte{0}, plugin, []byte{4, 1, 'a', 9, 'b'})},
		{"attribute length cut", "length-encoded integer is cut short",
			response(attrs, nul("trusted"), []byte{0}, plugin, []byte{4, 1, 'a', 0xfc, 1})},
	}
	servers := authServers(t)
	defer servers[0].Close()
	defer servers[1].Close()
	for _, s := range servers {
		for _, c := range cases {
			out := login(t, s, c.payload, nil)
			i := bytes.Index(out, []byte{0xff, 0x13, 0x04, '#', '0', '8', 'S', '0', '1'}) // ERR 1043
			if i < 4 || !bytes.Contains(out[i:], []byte("Bad handshake: ")) || !bytes.Contains(out[i:], []byte(c.want)) {
				t.Errorf("%s: got %q, want ERR 1043 naming %q", c.name, out, c.want)
				continue
			}
			if seq := out[i-1]; seq != 2 {
				t.Errorf("%s: the refusal has sequence %d, want 2", c.name, seq)
			}
		}
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%d panics while logging in: %v", n, s.lastPanic.Load())
		}
	}
}

// TestWellFormedHandshakeResponsesLogIn: what the checks accept is every shape a client sends:
// a database, length-encoded auth data, connection attributes, a CONNECT_WITH_DB flag with no
// database after it.
func TestWellFormedHandshakeResponsesLogIn(t *testing.T) {
	plugin := nul(mysql.AUTH_NATIVE_PASSWORD)
	attrs := []byte{14, 4, '_', 'p', 'i', 'd', 2, '4', '2', 3, '_', 'o', 's', 1, 'x'}
	accepted := map[string][]byte{
		"database": response(mysql.CLIENT_CONNECT_WITH_DB|mysql.CLIENT_PLUGIN_AUTH, nul("trusted"), []byte{0}, nul("test"), plugin),
		"lenenc auth and attributes": response(mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA|mysql.CLIENT_PLUGIN_AUTH|mysql.CLIENT_CONNECT_ATTRS,
			nul("trusted"), []byte{0}, plugin, attrs),
		"db flag, no database": response(mysql.CLIENT_CONNECT_WITH_DB, nul("trusted"), []byte{0}),
	}
	s := authServers(t)[0]
	defer s.Close()
	for name, p := range accepted {
		if err := checkHandshakeResponse(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if out := login(t, s, p, nil); !bytes.Contains(out, []byte{7, 0, 0, 2, 0}) { // the OK ending the handshake
			t.Errorf("%s: no OK after the handshake: %q", name, out)
		}
	}
}

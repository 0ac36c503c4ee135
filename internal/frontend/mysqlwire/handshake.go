package mysqlwire

import (
	"bytes"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// errBadHandshake names what was wrong with a client's handshake response.
type errBadHandshake struct{ what string }

func (e errBadHandshake) Error() string { return "Bad handshake: " + e.what }

// checkHandshakeResponse walks a HandshakeResponse41 payload field by field, as go-mysql will,
// and refuses one whose fields run past its end. go-mysql slices some of them by the length the
// client declares, which panics, or silently reads the buffer's spare capacity past the packet
// (a declared auth length of 10 in a packet with 2 bytes left), so the gate checks first.
// Payloads go-mysql rejects cleanly by itself (no PROTOCOL_41, an SSLRequest) pass unchecked.
func checkHandshakeResponse(p []byte) error {
	if len(p) < sslRequestBytes {
		return errBadHandshake{"the handshake response is shorter than its 32-byte fixed part"}
	}
	if len(p) == sslRequestBytes {
		return nil
	}
	caps := binary.LittleEndian.Uint32(p)
	if caps&mysql.CLIENT_PROTOCOL_41 == 0 || caps&mysql.CLIENT_SECURE_CONNECTION == 0 {
		return nil
	}
	pos, err := skipNulString(p, sslRequestBytes, "user name")
	if err != nil {
		return err
	}
	if pos, err = skipAuthData(p, pos, caps); err != nil {
		return err
	}
	if caps&mysql.CLIENT_CONNECT_WITH_DB != 0 && pos < len(p) {
		if pos, err = skipNulString(p, pos, "database name"); err != nil {
			return err
		}
	}
	if caps&mysql.CLIENT_PLUGIN_AUTH != 0 {
		if pos, err = skipNulString(p, pos, "auth plugin name"); err != nil {
			return err
		}
	}
	if caps&mysql.CLIENT_CONNECT_ATTRS != 0 {
		return checkAttributes(p[pos:])
	}
	return nil
}

// skipNulString returns the position after the NUL-terminated string at pos.
func skipNulString(p []byte, pos int, what string) (int, error) {
	i := bytes.IndexByte(p[pos:], 0)
	if i < 0 {
		return 0, errBadHandshake{"the " + what + " is not NUL-terminated"}
	}
	return pos + i + 1, nil
}

// skipAuthData returns the position after the auth response, length-encoded or 1-byte-length
// prefixed as the capabilities say.
func skipAuthData(p []byte, pos int, caps uint32) (int, error) {
	if caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
		n, null, size, err := lenencInt(p[pos:])
		if err != nil || null {
			return 0, errBadHandshake{"the auth response's length is missing or cut short"}
		}
		if n > uint64(len(p)-pos-size) {
			return 0, errBadHandshake{"the auth response runs past the end of the packet"}
		}
		return pos + size + int(n), nil
	}
	if pos >= len(p) || int(p[pos]) > len(p)-pos-1 {
		return 0, errBadHandshake{"the auth response runs past the end of the packet"}
	}
	return pos + 1 + int(p[pos]), nil
}

// checkAttributes checks the connection attributes: a length, then length-encoded strings up to
// the end of the packet (go-mysql reads them that far).
func checkAttributes(p []byte) error {
	total, null, size, err := lenencInt(p)
	if err != nil || null {
		return err
	}
	if total > uint64(len(p)-size) {
		return errBadHandshake{"the connection attributes run past the end of the packet"}
	}
	for pos := size; pos < len(p); {
		n, null, size, err := lenencInt(p[pos:])
		if err != nil {
			return err
		}
		if null {
			return nil
		}
		if n > uint64(len(p)-pos-size) {
			return errBadHandshake{"a connection attribute runs past the end of the packet"}
		}
		pos += size + int(n)
	}
	return nil
}

var errLenencCut = errBadHandshake{"a length-encoded integer is cut short"}

// lenencInt reads a length-encoded integer: its value, whether it is NULL (0xfb, or no bytes
// at all, as go-mysql reads it) and its size in bytes.
func lenencInt(b []byte) (n uint64, null bool, size int, err error) {
	if len(b) == 0 {
		return 0, true, 0, nil
	}
	switch b[0] {
	case 0xfb:
		return 0, true, 1, nil
	case 0xfc:
		size = 3
	case 0xfd:
		size = 4
	case 0xfe:
		size = 9
	case 0xff:
		return 0, false, 0, errBadHandshake{"0xff is not a length-encoded integer"}
	default:
		return uint64(b[0]), false, 1, nil
	}
	if len(b) < size {
		return 0, false, 0, errLenencCut
	}
	var buf [8]byte
	copy(buf[:], b[1:size])
	return binary.LittleEndian.Uint64(buf[:]), false, size, nil
}

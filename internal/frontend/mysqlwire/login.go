package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// The server's side of the login is go-mysql's (server.Conn's handshake: the greeting, an auth
// switch, the final OK or error), and go-mysql writes each packet whole in one Write. The
// connection it writes on (flushOnReadConn) reads those packets as they go out, in loginView,
// for two things go-mysql does not give:
//   - the scramble salt, of the greeting or of the latest auth switch, which authProvider checks
//     passwords against (go-mysql keeps it unexported);
//   - the greeting's status flags, which go-mysql sends empty. The greeting that goes out is
//     go-mysql's decoded (greeting) and encoded again with SERVER_STATUS_AUTOCOMMIT, the
//     session's first state: PyMySQL decides from it whether to send SET autocommit=0, and
//     finding autocommit off already it would send nothing, then take a ROLLBACK for undoing
//     what autocommit had committed;
//   - CLIENT_FOUND_ROWS among the capabilities, as MySQL announces it: go-sql-driver
//     (clientFoundRows=true) asks for it only when the server offers it, and the embedded
//     DuckDB engine counts an upsert's rows by it (query.Request.FoundRows);
//   - CLIENT_LOCAL_FILES, as MariaDB announces it with local_infile on: libmariadb and mysql2
//     send it only to a server that offers it, and a relayed LOAD DATA LOCAL INFILE asks the
//     client for its file (passthrough.go, relayLocalFile);
//   - CLIENT_MULTI_STATEMENTS, as MariaDB announces it: go-sql-driver (multiStatements=true)
//     asks for it only when the server offers it, and without it the proxy answers stacked
//     statements 1064 (multistmt.go: each statement of a batch is checked and run on its own);
//   - MariaDB's extended metadata, as MariaDB announces it (metadata.go), when the server
//     offers it (metadata).

// loginView follows go-mysql's login packets until the client is logged in.
type loginView struct {
	greeted  bool
	metadata bool   // the greeting offers MariaDB's extended metadata
	salt     []byte // nil until the greeting went out, or if it could not be read
}

// serverPacket reads one packet go-mysql writes during login (header included) and returns
// it as it goes out.
func (v *loginView) serverPacket(p []byte) []byte {
	if len(p) < 4 {
		return p
	}
	payload := p[4:]
	if !v.greeted {
		v.greeted = true
		g, err := parseGreeting(payload)
		if err != nil {
			return p // no salt: passwords checked against it fail, nobody is let in by mistake
		}
		v.salt = g.salt
		g.status |= mysql.SERVER_STATUS_AUTOCOMMIT
		g.capabilities |= mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_MULTI_STATEMENTS
		if v.metadata {
			g.capabilities &^= mysql.CLIENT_LONG_PASSWORD // CLIENT_MYSQL unset: extended capabilities follow
			g.extended = mariadbExtendedMetadata
		}
		return framePacket(g.appendTo(nil), p[3])
	}
	if len(payload) > 0 && payload[0] == mysql.EOF_HEADER { // an AuthSwitchRequest: a new salt
		v.salt = authSwitchSalt(payload[1:])
	}
	return p
}

// framePacket puts a packet header (payload length, seq) before payload.
func framePacket(payload []byte, seq byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// authSwitchSalt reads an AuthSwitchRequest's salt (after the 0xfe): plugin name NUL, salt, NUL.
func authSwitchSalt(p []byte) []byte {
	i := bytes.IndexByte(p, 0)
	if i < 0 {
		return nil
	}
	return bytes.TrimSuffix(p[i+1:], []byte{0})
}

// greeting is the payload of the server's HandshakeV10 packet.
type greeting struct {
	version      string
	connectionID uint32
	salt         []byte // auth-plugin-data, both parts (8 + 12 bytes)
	capabilities uint32
	charset      byte
	status       uint16
	authPlugin   string
	extended     uint32 // MariaDB's extended capabilities, written when CLIENT_MYSQL is unset
}

var errBadGreeting = errors.New("mysqlwire: not a HandshakeV10 greeting")

// parseGreeting decodes a HandshakeV10 payload: protocol 10, server version NUL, connection id
// (4), salt part 1 (8), filler, capabilities' low half (2), charset, status (2), capabilities'
// high half (2), auth data length, 10 reserved bytes (MariaDB's extended capabilities in the
// last 4), salt part 2 NUL, auth plugin NUL.
func parseGreeting(p []byte) (greeting, error) {
	var g greeting
	r := wireReader{p: p}
	if r.byte() != 10 {
		return g, errBadGreeting
	}
	g.version = r.nulString()
	g.connectionID = r.uint32()
	g.salt = append(g.salt, r.bytes(8)...)
	r.bytes(1)
	g.capabilities = uint32(r.uint16())
	g.charset = r.byte()
	g.status = r.uint16()
	g.capabilities |= uint32(r.uint16()) << 16
	saltLen := int(r.byte())
	r.bytes(10)
	g.salt = append(g.salt, r.bytes(max(13, saltLen-8)-1)...)
	r.bytes(1)
	g.authPlugin = r.nulString()
	if r.failed {
		return greeting{}, errBadGreeting
	}
	return g, nil
}

// appendTo encodes g as a HandshakeV10 payload (the layout parseGreeting reads).
func (g greeting) appendTo(b []byte) []byte {
	b = append(append(append(b, 10), g.version...), 0)
	b = binary.LittleEndian.AppendUint32(b, g.connectionID)
	b = append(append(b, g.salt[:8]...), 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(g.capabilities))
	b = append(b, g.charset)
	b = binary.LittleEndian.AppendUint16(b, g.status)
	b = binary.LittleEndian.AppendUint16(b, uint16(g.capabilities>>16))
	b = append(b, byte(len(g.salt)+1))
	b = append(b, make([]byte, 6)...)
	b = binary.LittleEndian.AppendUint32(b, g.extended)
	b = append(append(b, g.salt[8:]...), 0)
	return append(append(b, g.authPlugin...), 0)
}

// wireReader reads a packet's fields in order; a read past the end sets failed and yields zeros.
type wireReader struct {
	p      []byte
	failed bool
}

func (r *wireReader) bytes(n int) []byte {
	if n < 0 || n > len(r.p) {
		r.failed, r.p = true, nil
		return make([]byte, max(n, 0))
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *wireReader) byte() byte     { return r.bytes(1)[0] }
func (r *wireReader) uint16() uint16 { return binary.LittleEndian.Uint16(r.bytes(2)) }
func (r *wireReader) uint32() uint32 { return binary.LittleEndian.Uint32(r.bytes(4)) }
func (r *wireReader) nulString() string {
	i := bytes.IndexByte(r.p, 0)
	if i < 0 {
		r.failed, r.p = true, nil
		return ""
	}
	s := string(r.p[:i])
	r.p = r.p[i+1:]
	return s
}

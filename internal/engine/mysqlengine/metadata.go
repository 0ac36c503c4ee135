package mysqlengine

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// MariaDB's extended metadata (MARIADB_CLIENT_EXTENDED_METADATA): a MariaDB server offers it
// in its greeting (CLIENT_MYSQL left unset, the flag in the last 4 of the 10 reserved bytes),
// and to a client that asks (CLIENT_MYSQL unset, the flag in the last 4 of the handshake
// response's 23 reserved bytes) every column definition carries, after the column's original
// name, a length-encoded block of {id, length-encoded value}: 0 the type name (uuid, inet6,
// point), 1 the format (json). mysql2 parses a column of format json into objects by it.
//
// go-mysql's client neither asks for it nor reads such column definitions. So a connection
// asks for it in its handshake through greetConn, which stays between go-mysql and the
// connection's socket: on the relay paths its column definitions go to the client as they
// came, and the statements go-mysql reads itself answer no columns (SET, USE) or are read as
// the relay reads (warningsOf); on the Arrow path (rows.go) greetConn takes each definition's
// block out before go-mysql reads it (strip), and the Arrow field carries it
// (ExtendedMetadataKey) for the frontend to write back.

// mariadbExtendedMetadata is MARIADB_CLIENT_EXTENDED_METADATA among MariaDB's extended
// capabilities (the upper 32 bits of its 64-bit capability flags).
const mariadbExtendedMetadata = 1 << 3

// What the engine's server offers, as its last greeting said (Engine.metadataOffer).
const (
	offerUnknown int32 = iota
	offered
	notOffered
)

// greetConn sits between go-mysql's client and the socket of a connection being opened: it
// reads whether the server's greeting offers extended metadata and, for a connection that asks
// for it (ask), writes the request into the handshake response. A connection opened with
// extended metadata keeps it as its socket (hasMetadata); the others are given their socket
// back once logged in.
type greetConn struct {
	net.Conn
	ask      bool
	greeting []byte // the greeting's bytes read so far, until whole
	greeted  bool
	mariadb  bool // the greeting is MariaDB's (10.2 and later: CLIENT_MYSQL unset)
	offered  bool // the greeting offers extended metadata
	answered bool // the handshake response went out

	// strip: go-mysql reads the answers of the commands written (stripFor); their column
	// definitions lose their blocks, kept in blocks (the last result set's, one per column).
	strip        bool
	deprecateEOF bool
	state        stripState
	columns      uint64 // column definitions still to come
	continued    bool   // the last packet was maxPayload long: the next continues it
	in, out      []byte // read and not yet framed; framed and not yet read by go-mysql
	buf          []byte // the socket's reads under strip
	blocks       []string
}

// stripState is where an answer read under strip is.
type stripState uint8

const (
	stripNone    stripState = iota // no answer expected, or none that carries columns
	stripHead                      // the first packet: OK, ERR or a column count
	stripColumns                   // column definitions
	stripEOF                       // the EOF after them
	stripRows                      // rows, until an EOF, OK or ERR
)

// stripFor makes go-mysql's next commands' answers come without extended metadata, until
// stripDone.
func (g *greetConn) stripFor(deprecateEOF bool) { g.strip, g.deprecateEOF = true, deprecateEOF }

func (g *greetConn) stripDone() { g.strip, g.state = false, stripNone }

func (g *greetConn) Read(p []byte) (int, error) {
	if len(g.out) > 0 || len(g.in) > 0 || g.state != stripNone {
		return g.readStripped(p)
	}
	n, err := g.Conn.Read(p)
	if !g.greeted && n > 0 {
		g.greeting = append(g.greeting, p[:n]...)
		if len(g.greeting) >= 4 && len(g.greeting) >= 4+packetLen(g.greeting) {
			greeting := g.greeting[4 : 4+packetLen(g.greeting)]
			g.greeted, g.mariadb, g.offered = true, isMariaDB(greeting), offersMetadata(greeting)
			g.greeting = nil
		}
	}
	return n, err
}

// Write sends the handshake response with extended metadata asked for, when it is asked and
// offered; every other packet as it is. Over TLS the first packet after the greeting is the
// SSL request, the handshake response's first 32 bytes, and it asks: MariaDB reads the
// client's capabilities from it and not again from the response sent inside TLS (which goes
// through here encrypted, as it is). Under strip, a command that answers with result sets
// (COM_QUERY, COM_STMT_EXECUTE) starts one.
func (g *greetConn) Write(p []byte) (int, error) {
	if g.strip && len(p) > 4 && p[3] == 0 {
		g.state = stripNone
		if p[4] == mysql.COM_QUERY || p[4] == mysql.COM_STMT_EXECUTE {
			g.state = stripHead
		}
	}
	if !g.greeted || g.answered {
		return g.Conn.Write(p)
	}
	g.answered = true
	if !g.ask || !g.offered || len(p) < 4+32 {
		return g.Conn.Write(p)
	}
	q := bytes.Clone(p) // go-mysql's buffer
	binary.LittleEndian.PutUint32(q[4:], binary.LittleEndian.Uint32(q[4:])&^mysql.CLIENT_LONG_PASSWORD)
	binary.LittleEndian.PutUint32(q[4+28:], mariadbExtendedMetadata)
	if _, err := g.Conn.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// readStripped hands go-mysql the answer's packets, column definitions without their blocks,
// reading whole packets off the socket.
func (g *greetConn) readStripped(p []byte) (int, error) {
	for len(g.out) == 0 {
		if len(g.in) >= 4 && len(g.in) >= 4+packetLen(g.in) {
			g.frame()
			continue
		}
		if g.state == stripNone && len(g.in) > 0 { // past the answer's end: as it came
			g.out, g.in = g.in, nil
			break
		}
		if g.buf == nil {
			g.buf = make([]byte, 16<<10)
		}
		n, err := g.Conn.Read(g.buf)
		g.in = append(g.in, g.buf[:n]...)
		if n == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

// frame moves the first whole packet of in to out, its column definition's block taken out.
func (g *greetConn) frame() {
	n := packetLen(g.in)
	packet, payload := g.in[:4+n], g.in[4:4+n]
	g.in = g.in[4+n:]
	continues := g.continued
	g.continued = n == maxPayload
	switch {
	case continues || n == 0:
	case g.state == stripHead:
		switch payload[0] {
		case mysql.OK_HEADER:
			g.state = g.after(okStatus(payload))
		case mysql.ERR_HEADER, mysql.LocalInFile_HEADER:
			g.state = stripNone
		default:
			g.columns, _, _ = mysql.LengthEncodedInt(payload)
			g.blocks, g.state = g.blocks[:0], stripColumns
		}
	case g.state == stripColumns:
		def, block := cutMetadata(payload)
		g.blocks = append(g.blocks, block)
		m := len(def)
		g.out = append(append(g.out, byte(m), byte(m>>8), byte(m>>16), packet[3]), def...)
		if g.columns--; g.columns == 0 {
			g.state = stripRows
			if !g.deprecateEOF {
				g.state = stripEOF
			}
		}
		return
	case g.state == stripEOF:
		g.state = stripRows
	case g.state == stripRows && payload[0] == mysql.ERR_HEADER:
		g.state = stripNone
	case g.state == stripRows && payload[0] == mysql.EOF_HEADER && (n < 9 || g.deprecateEOF && n < maxPayload):
		if g.deprecateEOF {
			g.state = g.after(okStatus(payload))
		} else {
			g.state = g.after(binary.LittleEndian.Uint16(payload[3:]))
		}
	}
	g.out = append(g.out, packet...)
}

// after is the state after an answer's end with status: another result set follows or not.
func (g *greetConn) after(status uint16) stripState {
	if status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		return stripHead
	}
	return stripNone
}

// okStatus reads an OK packet's status flags (after its header, affected rows and insert id).
func okStatus(p []byte) uint16 {
	pos := 1
	for range 2 {
		_, _, n := mysql.LengthEncodedInt(p[pos:])
		pos += n
	}
	if len(p) < pos+2 {
		return 0
	}
	return binary.LittleEndian.Uint16(p[pos:])
}

// cutMetadata splits a column definition with extended metadata into the definition without
// its block and the block's contents.
func cutMetadata(def []byte) (rest []byte, block string) {
	names := 0
	for range 6 {
		_, _, size, err := mysql.LengthEncodedString(def[names:])
		if err != nil {
			return def, ""
		}
		names += size
	}
	if len(def)-names == 13 { // 0x0c and the 12 bytes it announces: no block after all
		return def, ""
	}
	b, _, size, err := mysql.LengthEncodedString(def[names:])
	if err != nil {
		return def, ""
	}
	return append(append([]byte(nil), def[:names]...), def[names+size:]...), string(b)
}

// Shutdown shuts a loop connection's socket down (cut).
func (g *greetConn) Shutdown() error {
	if s, ok := g.Conn.(interface{ Shutdown() error }); ok {
		return s.Shutdown()
	}
	return g.Conn.Close()
}

// offersMetadata reads a HandshakeV10 payload: does the MariaDB server offer extended metadata
// (greetingCaps)?
func offersMetadata(p []byte) bool {
	caps := greetingCaps(p)
	return caps >= 0 && isMariaDB(p) && binary.LittleEndian.Uint32(p[caps+14:])&mariadbExtendedMetadata != 0
}

// isMariaDB reads a HandshakeV10 payload: is it MariaDB's (CLIENT_MYSQL unset)?
func isMariaDB(p []byte) bool {
	caps := greetingCaps(p)
	return caps >= 0 && uint32(p[caps])&mysql.CLIENT_LONG_PASSWORD == 0
}

// greetingCaps is where the capabilities' low half is in a HandshakeV10 payload, which holds
// the extended capabilities; -1 when it is not one. Protocol 10, version NUL, connection id
// (4), salt (8), filler, capabilities' low half (2), charset, status (2), capabilities' high
// half (2), auth data length, 6 reserved bytes, MariaDB's extended capabilities (4).
func greetingCaps(p []byte) int {
	if len(p) == 0 || p[0] != 10 {
		return -1
	}
	end := bytes.IndexByte(p[1:], 0)
	if end < 0 {
		return -1
	}
	caps := 1 + end + 1 + 4 + 8 + 1
	if len(p) < caps+18 {
		return -1
	}
	return caps
}

// greeter wraps dialer so that the connection it opens goes through a greetConn, set in *g.
// With TLS, go-mysql's TLS connection wraps the greetConn (Write).
func greeter(dialer client.Dialer, ask bool, g **greetConn) client.Dialer {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dialer(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		*g = &greetConn{Conn: nc, ask: ask}
		return *g, nil
	}
}

// greeted notes what c's server offered and gives c its socket back unless c was opened with
// extended metadata. Over TLS, g stays under go-mysql's TLS connection, passing its bytes on,
// and a connection with extended metadata gets a greetConn of its own above TLS, where the
// column definitions can be read (stripping).
func (e *Engine) greeted(c *client.Conn, g *greetConn) {
	if g.offered {
		e.metadataOffer.Store(offered)
	} else {
		e.metadataOffer.Store(notOffered)
	}
	withMetadata := g.ask && g.offered
	switch {
	case c.Conn.Conn != net.Conn(g): // TLS
		if withMetadata {
			c.Conn.Conn = &greetConn{Conn: c.Conn.Conn, ask: true, offered: true, greeted: true, answered: true}
		}
	case !withMetadata:
		c.Conn.Conn = g.Conn
	}
}

// mayOfferMetadata reports whether a connection may be opened with extended metadata: a
// server not known to lack it.
func (e *Engine) mayOfferMetadata() bool {
	return e.metadataOffer.Load() != notOffered
}

// TakesClientCollation: a connection is opened in the client's collation (flags.go), so the
// client's bytes go to MariaDB as they are (engine.ClientCollationTaker).
func (e *Engine) TakesClientCollation() {}

// ExtendedMetadata reports whether the engine's server is known to offer extended metadata,
// and its connections can ask for it: a frontend may then offer it to its clients.
func (e *Engine) ExtendedMetadata() bool {
	return e.metadataOffer.Load() == offered
}

// ExtendedMetadataKey is the Arrow field metadata that carries a MariaDB column's extended
// metadata block (its contents, as MariaDB sent them) on the Arrow path.
const ExtendedMetadataKey = "mariadb.extended_metadata"

// stripping makes go-mysql read c's answers without extended metadata until the returned
// function runs, and returns the blocks of the last result set read (nil when c has none).
func stripping(e *Engine, c *client.Conn) (blocks func() []string, done func()) {
	g, ok := c.Conn.Conn.(*greetConn)
	if !ok {
		return func() []string { return nil }, func() {}
	}
	g.stripFor(e.deprecatesEOF(c))
	return func() []string { return g.blocks }, g.stripDone
}

// hasMetadata reports whether c was opened with extended metadata.
func hasMetadata(c *client.Conn) bool {
	_, ok := c.Conn.Conn.(*greetConn)
	return ok
}

// addEmptyMetadata gives each column definition of a relayed head (the column count packet,
// then the definitions, headers included) an empty extended metadata block, for a client that
// asked for extended metadata whose statement ran on a connection without it.
func addEmptyMetadata(head []byte) []byte {
	first := 4 + packetLen(head)
	out := append(make([]byte, 0, len(head)+32), head[:first]...)
	for at := first; at < len(head); {
		n, start := packetLen(head[at:]), len(out)
		out = AppendMetadata(append(out, 0, 0, 0, head[at+3]), head[at+4:at+4+n], "")
		m := len(out) - start - 4
		out[start], out[start+1], out[start+2] = byte(m), byte(m>>8), byte(m>>16)
		at += 4 + n
	}
	return out
}

// AppendMetadata appends column definition def (a payload, without extended metadata) to dst
// with the extended metadata block block (its contents; "" for a column without extended type
// info) after the column's original name, as MariaDB describes a column to a client that
// asked for extended metadata.
func AppendMetadata(dst, def []byte, block string) []byte {
	names := 0
	for range 6 { // catalog, schema, table, original table, name, original name
		_, _, size, err := mysql.LengthEncodedString(def[names:])
		if err != nil {
			return append(dst, def...) // not a column definition: left as it is
		}
		names += size
	}
	dst = append(append(dst, def[:names]...), mysql.PutLengthEncodedString([]byte(block))...)
	return append(dst, def[names:]...)
}

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
// asks for it in its handshake through greetConn, and only the relay's connections do
// (relayFlags): their column definitions go to the client undecoded; the go-mysql-read
// statements on them answer no columns (SET, USE) or are read here (rawWarnings).

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
	offered  bool // the greeting offers extended metadata
	answered bool // the handshake response went out
}

func (g *greetConn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if !g.greeted && n > 0 {
		g.greeting = append(g.greeting, p[:n]...)
		if len(g.greeting) >= 4 && len(g.greeting) >= 4+packetLen(g.greeting) {
			g.greeted, g.offered = true, offersMetadata(g.greeting[4:4+packetLen(g.greeting)])
			g.greeting = nil
		}
	}
	return n, err
}

// Write sends the handshake response with extended metadata asked for, when it is asked and
// offered; every other packet as it is.
func (g *greetConn) Write(p []byte) (int, error) {
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

// Shutdown shuts a loop connection's socket down (cut).
func (g *greetConn) Shutdown() error {
	if s, ok := g.Conn.(interface{ Shutdown() error }); ok {
		return s.Shutdown()
	}
	return g.Conn.Close()
}

// offersMetadata reads a HandshakeV10 payload: protocol 10, version NUL, connection id (4),
// salt (8), filler, capabilities' low half (2), charset, status (2), capabilities' high half
// (2), auth data length, 6 reserved bytes, MariaDB's extended capabilities (4).
func offersMetadata(p []byte) bool {
	if len(p) == 0 || p[0] != 10 {
		return false
	}
	end := bytes.IndexByte(p[1:], 0)
	if end < 0 {
		return false
	}
	caps := 1 + end + 1 + 4 + 8 + 1
	if len(p) < caps+18 || uint32(p[caps])&mysql.CLIENT_LONG_PASSWORD != 0 { // CLIENT_MYSQL: not MariaDB
		return false
	}
	return binary.LittleEndian.Uint32(p[caps+14:])&mariadbExtendedMetadata != 0
}

// greeter wraps dialer so that the connection it opens goes through a greetConn, set in *g.
// Not for TLS: the handshake response then goes inside it.
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
// extended metadata.
func (e *Engine) greeted(c *client.Conn, g *greetConn) {
	if g.offered {
		e.metadataOffer.Store(offered)
	} else {
		e.metadataOffer.Store(notOffered)
	}
	if !g.ask || !g.offered {
		c.Conn.Conn = g.Conn
	}
}

// mayOfferMetadata reports whether a connection may be opened with extended metadata: no TLS,
// and a server not known to lack it.
func (e *Engine) mayOfferMetadata() bool {
	return e.cfg.TLS == nil && e.metadataOffer.Load() != notOffered
}

// ExtendedMetadata reports whether the engine's server is known to offer extended metadata,
// and its connections can ask for it: a frontend may then offer it to its clients.
func (e *Engine) ExtendedMetadata() bool {
	return e.cfg.TLS == nil && e.metadataOffer.Load() == offered
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
		out = AppendEmptyMetadata(append(out, 0, 0, 0, head[at+3]), head[at+4:at+4+n])
		m := len(out) - start - 4
		out[start], out[start+1], out[start+2] = byte(m), byte(m>>8), byte(m>>16)
		at += 4 + n
	}
	return out
}

// AppendEmptyMetadata appends column definition def (a payload) to dst with an empty extended
// metadata block after the column's original name: def as MariaDB describes a column with no
// extended type info to a client that asked for extended metadata (one byte longer).
func AppendEmptyMetadata(dst, def []byte) []byte {
	names := 0
	for range 6 { // catalog, schema, table, original table, name, original name
		_, _, size, err := mysql.LengthEncodedString(def[names:])
		if err != nil {
			return append(dst, def...) // not a column definition: left as it is
		}
		names += size
	}
	return append(append(append(dst, def[:names]...), 0), def[names:]...)
}

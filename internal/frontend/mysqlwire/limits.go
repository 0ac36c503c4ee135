package mysqlwire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync/atomic"
)

// packetGate sits between the socket and go-mysql, which sizes its buffer from a packet's
// 4-byte header before reading the body: a header declaring 16 MiB would cost 16 MiB for 4 bytes
// sent. The gate hands a packet's header on only once its body has arrived (small packets, which
// fit its read buffer, stream through), and before login it refuses any packet larger than
// preAuthMax. After an SSLRequest it steps aside: what follows is TLS.
type packetGate struct {
	net.Conn
	r          *bufio.Reader
	preAuthMax int
	authed     bool // set once login succeeded: packets up to 16 MiB from then on
	open       bool // TLS follows: bytes pass untouched

	left  int           // bytes of the current packet (header included) not yet handed on
	big   []byte        // a large packet, whole, being handed on
	acc   *bytes.Buffer // a large packet being received
	want  int           // its size, header included
	sslIn bool          // the current packet is an SSLRequest
}

// largePacketsStarted counts large packets whose receipt began, for tests to wait on.
var largePacketsStarted atomic.Int64

// gateBufferBytes is the gate's read buffer; packets that fit stream through it.
const gateBufferBytes = 16 << 10

// sslRequestBytes is the payload of an SSLRequest (capabilities, max packet, charset, filler).
const sslRequestBytes = 32

func newPacketGate(c net.Conn, preAuthMax int) *packetGate {
	return &packetGate{Conn: c, r: bufio.NewReaderSize(c, gateBufferBytes), preAuthMax: preAuthMax}
}

// errPacketTooLarge ends a connection that announced a packet over its limit.
type errPacketTooLarge struct{ size, max int }

func (e errPacketTooLarge) Error() string {
	return fmt.Sprintf("a packet of %d bytes before login is larger than the limit of %d bytes", e.size, e.max)
}

func (g *packetGate) Read(p []byte) (int, error) {
	if g.open {
		return g.r.Read(p)
	}
	if g.left == 0 {
		if err := g.next(); err != nil {
			return 0, err
		}
	}
	if g.big != nil {
		n := copy(p, g.big[len(g.big)-g.left:])
		g.done(n)
		return n, nil
	}
	if len(p) > g.left {
		p = p[:g.left]
	}
	n, err := g.r.Read(p)
	g.done(n)
	return n, err
}

// next reads the next packet's header and, for a packet too large to stream, its whole body.
// A read error (a watch's deadline) leaves a partly received packet to be resumed.
func (g *packetGate) next() error {
	if g.acc == nil {
		hdr, err := g.r.Peek(4)
		if err != nil {
			return err
		}
		size := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if !g.authed && size > g.preAuthMax {
			return errPacketTooLarge{size, g.preAuthMax}
		}
		g.sslIn = !g.authed && hdr[3] == 1 && size == sslRequestBytes
		if 4+size <= gateBufferBytes {
			g.left = 4 + size
			return nil
		}
		// bytes.Buffer grows with what arrives, never to the announced size ahead of it.
		g.acc, g.want = &bytes.Buffer{}, 4+size
		largePacketsStarted.Add(1)
	}
	if _, err := g.acc.ReadFrom(io.LimitReader(g.r, int64(g.want-g.acc.Len()))); err != nil {
		return err
	}
	if g.acc.Len() < g.want {
		return io.ErrUnexpectedEOF
	}
	g.big, g.left, g.acc = g.acc.Bytes(), g.want, nil
	return nil
}

// done accounts for n bytes handed on; at a packet's end the gate drops a large packet and,
// after an SSLRequest with the client asking for TLS, opens.
func (g *packetGate) done(n int) {
	g.left -= n
	if g.left > 0 {
		return
	}
	g.big = nil
	if g.sslIn {
		g.open = true
	}
}

// refuseTooMany writes MySQL's own refusal (ER_CON_COUNT_ERROR, what a full mysqld sends in
// place of its greeting).
func refuseTooMany(c net.Conn) {
	msg := "Too many connections"
	payload := append([]byte{0xff, 0x10, 0x04, '#'}, "08004"+msg...) // 1040, SQLSTATE 08004
	pkt := append([]byte{byte(len(payload)), byte(len(payload) >> 8), 0, 0}, payload...)
	_, _ = c.Write(pkt)
}

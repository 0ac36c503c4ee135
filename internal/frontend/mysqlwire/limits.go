package mysqlwire

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// packetGate sits between the socket and go-mysql, which sizes its buffer from a packet's
// 4-byte header before reading the body: a header declaring 16 MiB would cost 16 MiB for 4 bytes
// sent. The gate hands a packet's header on only once its body has arrived (small packets, which
// fit its read buffer, stream through). It bounds a client's message as MariaDB does: go-mysql
// joins a packet of 16 MiB - 1 bytes with the packets that continue it, so the gate adds up the
// sizes their headers declare and refuses a message past the limit (PreAuthBytesMax before login,
// MessageBytesMax, the max_allowed_packet it advertises, after) at the header that crosses it, before its body is read. Once the
// client is logged in, a message begun must also arrive whole within the message timeout; time
// between messages (an idle client) does not count.
//
// TLS ends here, not in go-mysql, so that the gate sees the packets inside it too: with a TLS
// configuration the gate answers the client's SSLRequest itself, runs the TLS handshake and
// reads and writes through it from then on. go-mysql never sees the SSLRequest, so during login
// the client's packet sequence numbers are one ahead of go-mysql's; the gate shifts them both
// ways until the client's first command (sequence 0).
type packetGate struct {
	net.Conn                // the socket (deadlines, Close)
	r         *bufio.Reader // the socket, or TLS once the client asked for it
	w         io.Writer
	tlsConfig *tls.Config // nil: no TLS here (an SSLRequest goes on to go-mysql, which refuses it)
	limits    netlimit.Limits
	log       *slog.Logger           // told about refusals
	refusals  *prometheus.CounterVec // counts a logged-in client's refused messages (nil: none)
	msg       *netlimit.MessageTimer // set once login succeeded (loggedIn)
	checked   bool                   // the handshake response was checked (checkHandshakeResponse)
	metadata  bool                   // and asks for MariaDB's extended metadata (askedMetadata)
	clientSeq byte                   // the current packet's sequence number as the client sent it
	refused   atomic.Bool            // a refusal was written: the connection ends, nothing more goes out
	secure    bool                   // TLS runs
	shift     bool                   // sequence numbers are shifted (see above)
	wframe    framer
	wbuf      []byte
	ahead     []byte // read from the socket by the event loop and handed back: read first

	hdr       [4]byte       // the current packet's header, as handed on
	left      int           // bytes of the current packet (header included) not yet handed on
	big       []byte        // a large packet's body, whole, being handed on
	acc       *bytes.Buffer // a large packet's body being received
	want      int           // its size
	msgBytes  int           // payload bytes of the current message's packets before this one
	msgEnding bool          // the current packet is its message's last
	inMessage bool          // a message's first byte arrived and its last has not been handed on
	timed     bool          // and a read waited for more of it: msg runs
	inFlight  int           // bytes of the packet held whole counted in limits.InFlight

	// refuseCmd, once logged in, says from its first packet's header and first refuseHeadBytes
	// whether a command too large to stream would be refused for what its session may hold (a
	// COM_STMT_PREPARE or long data past the session's room): such a command is read past, never
	// held whole, and go-mysql is handed comRefusedUnread in its place (see takeUnread).
	refuseCmd func(head []byte, payloadLen int) error
	skip      int   // bytes of a refused command's current packet (header included) still to drop
	skipping  bool  // a refused command is being dropped
	skipDone  bool  // and skip is what is left of its last packet
	unread    error // the refusal of the command dropped, for the session to answer
	unreadSeq byte  // the sequence number its answer takes: one past its last packet's
}

// refuseHeadBytes is what refuseCmd sees of long data: its command byte, statement id and
// parameter (of a COM_STMT_PREPARE, its command byte).
const refuseHeadBytes = 7

// comRefusedUnread is the command byte the gate hands go-mysql in place of a command it
// refused unread; MySQL's commands end at 0x1f, MariaDB's at 0xfe.
const comRefusedUnread = 0xf0

// largePacketsStarted counts large packets whose receipt began, for tests to wait on.
var largePacketsStarted atomic.Int64

// gateBufferBytes is the gate's read buffer; packets that fit stream through it.
const gateBufferBytes = 16 << 10

// sslRequestBytes is the payload of an SSLRequest (capabilities, max packet, charset, filler).
const sslRequestBytes = 32

// newPacketGate gates c with limits (their defaults filled in).
func newPacketGate(c net.Conn, limits netlimit.Limits, tlsConfig *tls.Config, log *slog.Logger) *packetGate {
	g := &packetGate{Conn: c, w: c, limits: limits, tlsConfig: tlsConfig, log: log}
	g.r = bufio.NewReaderSize(timedSocket{g}, gateBufferBytes)
	return g
}

// timedSocket is the socket as the gate reads it (under TLS too): a read that waits for more
// of a message begun starts the message timer. A message that arrived whole with its first
// bytes, as most commands do, never starts it.
type timedSocket struct{ g *packetGate }

func (s timedSocket) Read(p []byte) (int, error) {
	if g := s.g; len(g.ahead) > 0 { // what the event loop read and handed back (loop.go)
		n := copy(p, g.ahead)
		g.ahead = g.ahead[n:]
		return n, nil
	}
	if g := s.g; g.inMessage && g.msg != nil && !g.timed {
		g.timed = true
		g.msg.Begin()
	}
	return s.g.Conn.Read(p)
}

// idle reports whether the gate stands between packets outside TLS, holding nothing read:
// the socket can be lent to the event loop, whose own bounds then apply (loop.go).
func (g *packetGate) idle() bool {
	return g.msg != nil && !g.secure && !g.shift && g.left == 0 && g.acc == nil && !g.inMessage &&
		g.r.Buffered() == 0 && !g.refused.Load() && len(g.ahead) <= relayloop.BufferBytesDefault
}

// timedOut ends a client that left a message half sent on the event loop, as Read does on
// the goroutine.
func (g *packetGate) timedOut() error {
	g.log.Info("mysqlwire: client message refused", "remote", g.RemoteAddr().String(), "reason", "not whole within "+g.msg.Timeout().String())
	g.count("message_timeout")
	return g.refuse(0, mysql.ER_NET_READ_INTERRUPTED, errMessageTimeout)
}

// loggedIn switches to the logged-in client's bounds: max_allowed_packet and the message timeout.
func (g *packetGate) loggedIn() {
	g.msg = netlimit.NewMessageTimer(g.Conn, g.limits.MessageTimeout)
}

// commandDone ends the count of the last command's packets in the daemon's messages in
// flight: it was answered, and what held it (go-mysql's buffer, its decoded copies) is garbage.
func (g *packetGate) commandDone() { g.giveBack() }

// stop releases the message timer when the connection ends.
func (g *packetGate) stop() {
	if g.msg != nil {
		g.msg.Stop()
	}
	g.giveBack()
}

// giveBack ends the count of the command's packets held whole: once the command was answered
// (commandDone), or the connection ends. Handing a packet on does not end it: go-mysql's copy
// of the command (ReadPacket's buffer) lives until the command was handled.
func (g *packetGate) giveBack() {
	if g.inFlight > 0 {
		g.limits.InFlight.Give(g.inFlight)
		g.inFlight = 0
	}
}

// errPacketTooLarge ends a connection that announced a message over its limit.
type errPacketTooLarge struct {
	size, max int
	loggedIn  bool
}

// Error is MariaDB's own message after login (the client can ask @@max_allowed_packet for the
// limit); before login it names both sizes.
func (e errPacketTooLarge) Error() string {
	if e.loggedIn {
		return "Got a packet bigger than 'max_allowed_packet' bytes"
	}
	return fmt.Sprintf("a packet of %d bytes before login is larger than the limit of %d bytes", e.size, e.max)
}

// errMessageTimeout is MariaDB's message for a packet that stopped arriving (net_read_timeout).
var errMessageTimeout = errors.New("Got timeout reading communication packets")

// Read hands go-mysql the client's packets. A read that failed because the message timeout
// expired ends the connection with MariaDB's ER_NET_READ_INTERRUPTED.
func (g *packetGate) Read(p []byte) (int, error) {
	n, err := g.read(p)
	if err != nil && g.msg != nil && g.msg.Expired() {
		g.log.Info("mysqlwire: client message refused", "remote", g.RemoteAddr().String(), "reason", "not whole within "+g.msg.Timeout().String())
		g.count("message_timeout")
		err = g.refuse(g.clientSeq, mysql.ER_NET_READ_INTERRUPTED, errMessageTimeout)
	}
	return n, err
}

func (g *packetGate) read(p []byte) (int, error) {
	if g.left == 0 {
		if err := g.next(); err != nil {
			return 0, err
		}
	}
	var n int
	var err error
	body := g.bodyLen()
	switch {
	case g.left > body: // the header first
		n = copy(p, g.hdr[len(g.hdr)-(g.left-body):])
	case g.big != nil:
		n = copy(p, g.big[body-g.left:])
	default:
		if len(p) > g.left {
			p = p[:g.left]
		}
		n, err = g.r.Read(p)
	}
	g.left -= n
	if g.left == 0 {
		g.big = nil
		if g.msgEnding {
			g.endMessage()
		}
	}
	return n, err
}

// bodyLen is the current packet's body size.
func (g *packetGate) bodyLen() int { return packetLen(g.hdr[:]) }

// next reads the next packet's header and, for a packet too large to stream, its whole body.
// A read error (a watch's deadline) leaves a partly received packet to be resumed.
func (g *packetGate) next() error {
	if g.skipping {
		return g.skipUnread()
	}
	if g.acc == nil {
		if g.msg != nil && !g.inMessage { // idle until a new message's first byte
			if _, err := g.r.Peek(1); err != nil {
				return err
			}
			g.inMessage = true
			g.clientSeq = 0 // a command's first packet, whether or not its header is whole
		}
		hdr, err := g.r.Peek(4)
		if err != nil {
			return err
		}
		size := packetLen(hdr)
		if refused, err := g.refusedFromHeader(size); refused || err != nil {
			return err
		}
		firstPacket := g.msgBytes == 0
		if err := g.admit(hdr[3], size); err != nil {
			return err
		}
		if g.tlsConfig != nil && !g.secure && g.msg == nil && hdr[3] == 1 && size == sslRequestBytes {
			if _, err := g.r.Peek(4 + size); err != nil {
				return err
			}
			_, _ = g.r.Discard(4 + size)
			if err := g.startTLS(); err != nil {
				return err
			}
			return g.next()
		}
		copy(g.hdr[:], hdr)
		g.clientSeq = hdr[3]
		_, _ = g.r.Discard(4)
		if g.shift {
			if g.hdr[3] == 0 { // the client's first command: login is over
				g.shift = false
			} else {
				g.hdr[3]--
			}
		}
		checking := g.msg == nil && !g.checked // the handshake response is held whole, to be checked
		if size <= gateBufferBytes && !checking {
			g.left = 4 + size
			return nil
		}
		if g.msg != nil && size > gateBufferBytes {
			// Held whole, it counts in the daemon's messages in flight until it was handled (see
			// giveBack): a thousand clients each sending max_allowed_packet at once would
			// otherwise exhaust the host.
			if firstPacket {
				g.giveBack() // the message before it was handled (a LOAD DATA file's packets: one at a time)
			}
			if err := g.limits.InFlight.Take(size); err != nil {
				g.log.Info("mysqlwire: client message refused", "remote", g.RemoteAddr().String(), "reason", redact.Error(err))
				g.count("in_flight_bytes")
				return g.refuse(g.clientSeq, mysql.ER_OUT_OF_RESOURCES, err)
			}
			g.inFlight += size // a command's packets together, until it was answered
		}
		// bytes.Buffer grows with what arrives, never to the announced size ahead of it.
		g.acc, g.want = &bytes.Buffer{}, size
		if size > gateBufferBytes {
			largePacketsStarted.Add(1)
		}
	}
	if _, err := g.acc.ReadFrom(io.LimitReader(g.r, int64(g.want-g.acc.Len()))); err != nil {
		return err
	}
	if g.acc.Len() < g.want {
		return io.ErrUnexpectedEOF
	}
	g.big, g.left, g.acc = g.acc.Bytes(), 4+g.want, nil
	if g.msg == nil && !g.checked {
		g.checked = true
		if err := checkHandshakeResponse(g.big); err != nil {
			return g.refuse(g.clientSeq, mysql.ER_HANDSHAKE_ERROR, err)
		}
		g.metadata = askedMetadata(g.big)
	}
	return nil
}

// refusedFromHeader asks refuseCmd about a logged-in client's command whose first packet, of
// size bytes, is too large to stream; a refused command is dropped (skipUnread). Nothing is
// consumed until it is refused, so a read error here leaves the packet to be read again.
func (g *packetGate) refusedFromHeader(size int) (bool, error) {
	if g.refuseCmd == nil || g.msg == nil || g.msgBytes != 0 || size <= gateBufferBytes || size > g.limits.MessageBytesMax {
		return false, nil // (past max_allowed_packet: admit refuses it at its header)
	}
	cmd, err := g.r.Peek(5)
	if err != nil {
		return false, err
	}
	head := 1
	if cmd[4] == mysql.COM_STMT_SEND_LONG_DATA {
		head = refuseHeadBytes
	} else if cmd[4] != mysql.COM_STMT_PREPARE {
		return false, nil
	}
	hdr, err := g.r.Peek(4 + head)
	if err != nil {
		return false, err
	}
	refusal := g.refuseCmd(hdr[4:], size)
	if refusal == nil {
		return false, nil
	}
	g.skipping, g.skipDone, g.unread = true, false, refusal
	return true, g.skipUnread()
}

// skipUnread drops the refused command's packets as they arrive (the message timeout runs),
// then hands go-mysql a one-byte command comRefusedUnread in their place. A read error leaves
// the rest to drop on the next read.
func (g *packetGate) skipUnread() error {
	for {
		if g.skip > 0 {
			n, err := g.r.Discard(g.skip)
			if g.skip -= n; err != nil {
				return err
			}
		}
		if g.skipDone {
			break
		}
		hdr, err := g.r.Peek(4)
		if err != nil {
			return err
		}
		size := packetLen(hdr)
		if err := g.admit(hdr[3], size); err != nil {
			return err
		}
		g.skip, g.unreadSeq, g.skipDone = 4+size, hdr[3]+1, g.msgEnding
	}
	g.skipping = false
	g.hdr, g.big, g.left = [4]byte{1, 0, 0, 0}, []byte{comRefusedUnread}, 5
	return nil
}

// takeUnread is the refusal of the command the gate dropped unread, and the sequence number
// the answer to it takes (ok false: none was, the client sent comRefusedUnread itself).
func (g *packetGate) takeUnread() (refusal error, answerSeq byte, ok bool) {
	if g.unread == nil {
		return nil, 0, false
	}
	refusal, answerSeq = g.unread, g.unreadSeq
	g.unread, g.unreadSeq = nil, 0
	return refusal, answerSeq, true
}

// admit counts a packet of size bytes into its message and refuses the message once it is over
// the limit, as MariaDB does, before the packet's body is read.
func (g *packetGate) admit(seq byte, size int) error {
	limit := g.limits.PreAuthBytesMax
	if g.msg != nil {
		limit = g.limits.MessageBytesMax
	}
	total := g.msgBytes + size
	if total > limit {
		g.log.Info("mysqlwire: client message refused", "remote", g.RemoteAddr().String(), "declared_bytes", total, "limit_bytes", limit)
		g.count("message_bytes")
		return g.refuse(seq, mysql.ER_NET_PACKET_TOO_LARGE, errPacketTooLarge{total, limit, g.msg != nil})
	}
	g.msgEnding = size < maxPayload
	g.msgBytes = total
	if g.msgEnding {
		g.msgBytes = 0
	}
	return nil
}

// count counts a logged-in client's message refused at bound.
func (g *packetGate) count(bound string) {
	if g.msg != nil && g.refusals != nil && !g.refused.Load() {
		g.refusals.WithLabelValues("mysqlwire", bound).Inc()
	}
}

// endMessage stops the message's clock once its last packet was handed on.
func (g *packetGate) endMessage() {
	g.inMessage = false
	if g.timed {
		g.timed = false
		g.msg.End()
	}
}

// startTLS runs the server side of the TLS handshake the client asked for, on the bytes the
// gate already holds and the socket.
func (g *packetGate) startTLS() error {
	tc := tls.Server(&bufferedConn{Conn: g.Conn, r: g.r}, g.tlsConfig)
	if err := tc.Handshake(); err != nil {
		return err
	}
	g.r, g.w, g.secure, g.shift = bufio.NewReaderSize(tc, gateBufferBytes), tc, true, true
	return nil
}

// refuse answers a refused packet with MySQL's own error for it (errno, SQLSTATE 08S01) and
// the reason, as the next packet of the client's sequence, and drops what go-mysql writes after
// it (its generic wrap of the same error). It writes once; err is returned each time.
func (g *packetGate) refuse(seq byte, errno uint16, err error) error {
	if g.refused.Swap(true) {
		return err
	}
	payload := append([]byte{0xff, byte(errno), byte(errno >> 8), '#'}, sqlstate.MySQLCommunicationLink+err.Error()...)
	pkt := append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq + 1}, payload...)
	_, _ = g.w.Write(pkt)
	return err
}

func (g *packetGate) Write(p []byte) (int, error) {
	if g.refused.Load() {
		return len(p), nil
	}
	if !g.shift {
		return g.w.Write(p)
	}
	g.wbuf = append(g.wbuf[:0], p...)
	g.wframe.shiftSeq(g.wbuf)
	n, err := g.w.Write(g.wbuf)
	return min(n, len(p)), err
}

// framer follows packet boundaries in a byte stream written in any pieces.
type framer struct {
	hdr  [4]byte
	hn   int // header bytes seen of the current packet
	body int // body bytes of the current packet still to come
}

// shiftSeq adds one to the sequence number of every packet header in b.
func (f *framer) shiftSeq(b []byte) {
	for i := 0; i < len(b); {
		if f.body > 0 {
			n := min(f.body, len(b)-i)
			f.body -= n
			i += n
			continue
		}
		if f.hn == 3 {
			b[i]++
		}
		f.hdr[f.hn] = b[i]
		f.hn++
		i++
		if f.hn == 4 {
			f.hn, f.body = 0, packetLen(f.hdr[:])
		}
	}
}

// bufferedConn reads what the gate's reader holds before the socket.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// secureConn is implemented by the connections go-mysql reads from: whether TLS runs below.
type secureConn interface{ isSecure() bool }

func (g *packetGate) isSecure() bool { return g.secure }

// refuseTooMany writes MySQL's own refusal (ER_CON_COUNT_ERROR, what a full mysqld sends in
// place of its greeting).
func refuseTooMany(c net.Conn) {
	msg := "Too many connections"
	errno := mysql.ER_CON_COUNT_ERROR
	payload := append([]byte{0xff, byte(errno), byte(errno >> 8), '#'}, sqlstate.SQLServerRejectedEstablishmentOfSQLConnection+msg...)
	pkt := append([]byte{byte(len(payload)), byte(len(payload) >> 8), 0, 0}, payload...)
	_, _ = c.Write(pkt)
}

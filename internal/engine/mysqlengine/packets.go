package mysqlengine

import (
	"sync"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// The relay's reader: a relayed COM_QUERY's answer is read off the connection's transport
// into one buffer of the relay's own, around go-mysql's packet reader, so rows are handed on
// as the bytes the engine sent (headers included, as many rows as one read brought), never
// copied packet by packet. go-mysql's buffered reader holds nothing between commands (every
// answer is read to its end before the connection goes back to the pool), so reading the
// transport directly for one command skips nothing, and leaves nothing behind once the answer
// has been read to its end.

const (
	// relayBufferBytes is the read buffer of one relayed query: one read takes up to this much.
	relayBufferBytes = 64 << 10
	// relayBufferKeepMax: a buffer grown past this (a row larger than it) is not pooled.
	relayBufferKeepMax = 1 << 20
	// maxPayload is the largest payload of one packet; a packet this long is continued by the
	// next one (a row of 16 MiB or more).
	maxPayload = 1<<24 - 1
)

// relayBuffers are one relayed query's buffers, pooled: a query allocates none of them.
type relayBuffers struct {
	in   []byte // in[r:w] has been read and not consumed yet
	r, w int
	out  []byte   // the command packet
	head []byte   // the column count and definition packets, as the engine framed them
	cols [][]byte // the definition packets within head
}

var relayPool = sync.Pool{New: func() any { return &relayBuffers{in: make([]byte, relayBufferBytes)} }}

func getRelayBuffers() *relayBuffers { return relayPool.Get().(*relayBuffers) }

func putRelayBuffers(b *relayBuffers) {
	if len(b.in) > relayBufferKeepMax || cap(b.head) > relayBufferKeepMax {
		return
	}
	b.r, b.w = 0, 0
	clear(b.cols) // the slices point into head; nothing else must keep them
	relayPool.Put(b)
}

// buffered reports whether bytes the command has not consumed are left in the buffer.
func (b *relayBuffers) buffered() bool { return b.r < b.w }

// read appends at least one byte from c to in[r:w], first making room for need bytes from r.
func (b *relayBuffers) read(c *client.Conn, need int) error {
	if b.r > 0 {
		b.w = copy(b.in, b.in[b.r:b.w])
		b.r = 0
	}
	if need > len(b.in) {
		grown := make([]byte, max(need, 2*len(b.in)))
		copy(grown, b.in[:b.w])
		b.in = grown
	}
	if c.Compression != mysql.MYSQL_COMPRESS_NONE {
		return b.readCompressed(c)
	}
	for {
		n, err := c.Conn.Conn.Read(b.in[b.w:])
		b.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readCompressed takes one packet through go-mysql's reader (which inflates it) and frames
// it again as the server did; the relay only sees uncompressed packets. The engine never
// asks for compression itself; this keeps the relay right for a connection that does.
func (b *relayBuffers) readCompressed(c *client.Conn) error {
	seq := c.Sequence
	p, err := c.ReadPacket()
	if err != nil {
		return err
	}
	framed := b.in[:b.w]
	for {
		n := min(len(p), maxPayload)
		framed = append(framed, byte(n), byte(n>>8), byte(n>>16), seq)
		framed = append(framed, p[:n]...)
		p, seq = p[n:], seq+1
		if n < maxPayload {
			break
		}
	}
	if cap(framed) > len(b.in) {
		b.in = framed[:cap(framed)]
	}
	b.w = len(framed)
	return nil
}

// packetLen is the payload length in the packet header at p.
func packetLen(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }

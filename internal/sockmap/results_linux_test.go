//go:build linux

package sockmap

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func resultSplicer(t testing.TB) *ResultSplicer {
	s, err := NewResults(16)
	return orSkip(t, s, err)
}

// splicedPair is a client, an engine, and a relay's two sockets between them with the engine's
// answers spliced.
func splicedPair(t testing.TB, s *ResultSplicer) (client, engine *net.TCPConn, p *ResultPair) {
	client, relayC := connPair(t)
	relayE, engine := connPair(t)
	p, err := s.Splice(fd(t, relayC), fd(t, relayE))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Unsplice() })
	return client, engine, p
}

// answer is one statement's answer as an engine writes it, and what its end must record.
type answer struct {
	wire    []byte
	rows    int64
	bytes   int64
	status  uint16
	errCode uint16
}

func (a *answer) packet(payload []byte) {
	for {
		n := min(len(payload), maxPacket)
		a.wire = append(a.wire, byte(n), byte(n>>8), byte(n>>16), 0)
		a.wire = append(a.wire, payload[:n]...)
		a.bytes += int64(n)
		payload = payload[n:]
		if n < maxPacket {
			return
		}
	}
}

const maxPacket = 1<<24 - 1

func lenenc(rt *rapid.T, label string) []byte {
	switch rapid.IntRange(0, 3).Draw(rt, label+"Size") {
	case 0:
		return []byte{byte(rapid.IntRange(0, 0xfa).Draw(rt, label))}
	case 1:
		v := rapid.Uint16().Draw(rt, label)
		return []byte{0xfc, byte(v), byte(v >> 8)}
	case 2:
		v := rapid.Uint32Range(0, 1<<24-1).Draw(rt, label)
		return []byte{0xfd, byte(v), byte(v >> 8), byte(v >> 16)}
	}
	return binary.LittleEndian.AppendUint64([]byte{0xfe}, rapid.Uint64().Draw(rt, label))
}

const moreResults = 0x08

// drawAnswer draws a statement's answer: an ERR, or OKs and result sets (text rows of any
// bytes: led by 0x00, 0xFB, 0xFE at 9 bytes or more, up to 100 KB), results after the first
// announced by SERVER_MORE_RESULTS_EXISTS, and possibly an ERR in place of a result's rows' end.
func drawAnswer(rt *rapid.T) answer {
	var a answer
	results := rapid.IntRange(1, 3).Draw(rt, "results")
	for r := range results {
		last := r == results-1
		status := rapid.Uint16().Draw(rt, "status") &^ moreResults
		if !last {
			status |= moreResults
		}
		switch rapid.IntRange(0, 2).Draw(rt, "kind") {
		case 0: // an ERR ends the answer
			code := rapid.Uint16Range(1000, 4000).Draw(rt, "code")
			a.packet(append(binary.LittleEndian.AppendUint16([]byte{0xff}, code), "#42000no such thing"...))
			a.status, a.errCode = 0, code
			return a
		case 1:
			ok := append([]byte{0}, lenenc(rt, "affected")...)
			ok = append(ok, lenenc(rt, "insertID")...)
			ok = binary.LittleEndian.AppendUint16(ok, status)
			ok = binary.LittleEndian.AppendUint16(ok, 0)
			ok = append(ok, rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "info")...)
			a.packet(ok)
		case 2:
			cols := rapid.IntRange(1, 4).Draw(rt, "cols")
			a.packet([]byte{byte(cols)})
			for range cols {
				a.packet(append([]byte{3, 'd', 'e', 'f'}, rapid.SliceOfN(rapid.Byte(), 10, 60).Draw(rt, "coldef")...))
			}
			a.packet([]byte{0xfe, 0, 0, 2, 0})
			for range rapid.IntRange(0, 40).Draw(rt, "rows") {
				var row []byte
				switch rapid.IntRange(0, 3).Draw(rt, "rowKind") {
				case 0:
					row = append([]byte{0}, rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(rt, "row")...)
				case 1:
					row = append([]byte{0xfb}, rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(rt, "row")...)
				case 2:
					row = append([]byte{0xfe}, rapid.SliceOfN(rapid.Byte(), 8, 30).Draw(rt, "row")...)
				default:
					row = bytes.Repeat([]byte{'x'}, rapid.IntRange(1, 100_000).Draw(rt, "rowLen"))
					row[0] = byte(rapid.IntRange(0, 0xfa).Draw(rt, "rowHead"))
				}
				a.packet(row)
				a.rows++
			}
			if rapid.IntRange(0, 9).Draw(rt, "rowsErr") == 0 {
				code := rapid.Uint16Range(1000, 4000).Draw(rt, "code")
				a.packet(append(binary.LittleEndian.AppendUint16([]byte{0xff}, code), "#70100interrupted"...))
				a.status, a.errCode = 0, code
				return a
			}
			a.packet(binary.LittleEndian.AppendUint16([]byte{0xfe, 1, 0}, status))
		}
		a.status = status
	}
	return a
}

// pieces draws how an answer of n bytes is written: each piece its own write (its own segment,
// TCP_NODELAY), so that packets and their headers straddle the engine socket's arrivals.
func pieces(rt *rapid.T, n int) []int {
	var ps []int
	for n > 0 {
		k := min(n, rapid.IntRange(1, 70_000).Draw(rt, "piece"))
		ps = append(ps, k)
		n -= k
	}
	return ps
}

func writePieces(c net.Conn, b []byte, ps []int) error {
	for _, n := range ps {
		if _, err := c.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// TestResultSpliceRecordsEachAnswersEnd: an engine's answers, written in pieces of any size,
// reach the client whole and in order through the kernel, and the end of each is recorded as
// the answer says: its rows, its payload bytes, its last status flags or its error code.
func TestResultSpliceRecordsEachAnswersEnd(t *testing.T) {
	s := resultSplicer(t)
	rapid.Check(t, func(rt *rapid.T) {
		client, engine, p := splicedPair(t, s)
		defer func() { _ = p.Unsplice() }() // the pair's slot is free for the next run
		var forwarded int64
		for i := range rapid.IntRange(1, 6).Draw(rt, "statements") {
			a := drawAnswer(rt)
			werr := make(chan error, 1)
			ps := pieces(rt, len(a.wire))
			go func() { werr <- writePieces(engine, a.wire, ps) }()
			got := make([]byte, len(a.wire))
			_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
			if k, err := io.ReadFull(client, got); err != nil {
				rt.Fatalf("statement %d: read %d of %d bytes: %v", i, k, len(a.wire), err)
			}
			if err := <-werr; err != nil {
				rt.Fatal(err)
			}
			if !bytes.Equal(got, a.wire) {
				rt.Fatalf("statement %d: the bytes differ", i)
			}
			forwarded += int64(len(a.wire))
			e := p.LastEnd()
			if e.Seq != uint64(i+1) || e.Lost {
				rt.Fatalf("statement %d: ends %d, lost %v; want %d ends", i, e.Seq, e.Lost, i+1)
			}
			if e.Rows != a.rows || e.Bytes != a.bytes || e.Status != a.status || e.ErrCode != a.errCode {
				rt.Fatalf("statement %d: end rows %d bytes %d status %#x error %d; want %d, %d, %#x, %d",
					i, e.Rows, e.Bytes, e.Status, e.ErrCode, a.rows, a.bytes, a.status, a.errCode)
			}
			if e.Forwarded != uint64(forwarded) {
				rt.Fatalf("statement %d: forwarded %d bytes, want %d", i, e.Forwarded, forwarded)
			}
			if ok, err := p.Drained(); !ok || err != nil {
				rt.Fatalf("statement %d: not drained after the client read everything: %v", i, err)
			}
		}
	})
}

// TestResultSpliceFollowsALongRow: a row longer than one packet (0xFFFFFF bytes, then the
// rest in a packet of its own, led by any byte, here an EOF's) is one row, not an end.
func TestResultSpliceFollowsALongRow(t *testing.T) {
	s := resultSplicer(t)
	client, engine, p := splicedPair(t, s)
	var a answer
	a.packet([]byte{1})
	a.packet([]byte{3, 'd', 'e', 'f', 0, 0, 0, 1, 'x', 0, 0x0c, 0x3f, 0, 1, 0, 0, 0, 0xfd, 0, 0, 0, 0})
	a.packet([]byte{0xfe, 0, 0, 2, 0})
	row := bytes.Repeat([]byte{'y'}, maxPacket+5)
	copy(row[maxPacket:], []byte{0xfe, 0, 0, 2, 0})
	a.packet(row)
	a.packet([]byte{0xfe, 0, 0, 0x22, 0})
	go func() { _, _ = engine.Write(a.wire) }()
	got := make([]byte, len(a.wire))
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, a.wire) {
		t.Fatalf("the answer: %v (equal %v)", err, bytes.Equal(got, a.wire))
	}
	if e := p.LastEnd(); e.Seq != 1 || e.Rows != 1 || e.Bytes != a.bytes || e.Status != 0x22 {
		t.Fatalf("end %+v, want one end of 1 row, %d bytes, status 0x22", e, a.bytes)
	}
}

// TestDrainedWaitsForTheSplicedBytes: while a client reads nothing of a long answer, what the
// splice still holds for it is not drained (an owner's own write would overtake it); once the
// client has read everything, it is.
func TestDrainedWaitsForTheSplicedBytes(t *testing.T) {
	s := resultSplicer(t)
	client, engine, p := splicedPair(t, s)
	var a answer
	a.packet([]byte{1})
	a.packet([]byte{3, 'd', 'e', 'f'})
	a.packet([]byte{0xfe, 0, 0, 2, 0})
	for range 64 {
		a.packet(bytes.Repeat([]byte{'r'}, 1<<19))
	}
	a.packet([]byte{0xfe, 0, 0, 2, 0})
	go func() { _, _ = engine.Write(a.wire) }()
	// The engine's write goes on while the kernel has room: wait until the splice has taken
	// more than the client's socket can hold.
	for deadline := time.Now().Add(10 * time.Second); p.LastEnd().Forwarded < 16<<20; {
		if time.Now().After(deadline) {
			t.Fatalf("the splice took %d bytes", p.LastEnd().Forwarded)
		}
		time.Sleep(time.Millisecond)
	}
	if ok, err := p.Drained(); ok || err != nil {
		t.Fatalf("drained with the client reading nothing: %v, %v", ok, err)
	}
	got := make([]byte, len(a.wire))
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, a.wire) {
		t.Fatalf("the answer: %v", err)
	}
	if ok, err := p.Drained(); !ok || err != nil {
		t.Fatalf("not drained after the client read everything: %v", err)
	}
}

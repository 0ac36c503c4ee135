//go:build linux

package relayloop

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// closeSync is a client's Close of a statement and its Sync; answered is what the Watch
// answers each with.
var (
	closeSync = append(pgMsg('C', []byte("Ss1\x00")), pgMsg('S', nil)...)
	answered  = append(pgMsg('3', nil), pgMsg('Z', []byte{'I'})...)
)

// answerAll answers every Close and Sync of A's with what answered holds for it, on h.
func answerAll(h **Handle, mu *sync.Mutex) func(Direction, []byte) Verdict {
	return func(_ Direction, msg []byte) Verdict {
		mu.Lock()
		defer mu.Unlock()
		if msg[0] == 'C' {
			return (*h).Answering(answered[:5])
		}
		return (*h).Answering(answered[5:])
	}
}

// startAnswering starts a pair of A alone (fa) whose Watch answers every message (answerAll).
func startAnswering(t *testing.T, l *Loop, fa int, done func(Result)) *Handle {
	t.Helper()
	var mu sync.Mutex
	var h *Handle
	mu.Lock()
	defer mu.Unlock()
	h, err := l.Add(Pair{A: fa, B: -1, Framing: [2]Framer{PGWatching(), nil}, Watch: answerAll(&h, &mu), Done: done})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A pair without B answers A's messages itself where its Watch says Answer: the answers come
// back in order, however many there are and however small the loop's buffer.
func TestAnswerWritesBackWithoutB(t *testing.T) {
	l := newLoop(t, 64)
	client, fa := aloneClient(t)
	done := make(chan Result, 1)
	h := startAnswering(t, l, fa, func(r Result) { _ = unix.Close(fa); done <- r })
	const n = 500
	go func() { _, _ = client.Write(bytes.Repeat(closeSync, n)) }()
	if got := readN(t, client, n*len(answered)); !bytes.Equal(got, bytes.Repeat(answered, n)) {
		t.Fatalf("answers out of order or missing")
	}
	h.Stop()
	if r := <-done; r.Err != ErrStopped {
		t.Fatalf("result %+v", r)
	}
}

// A client that sends and does not read what it is answered fills the buffer the answers wait
// in: the pair then pauses at the next message (Answer is Pause), holding what it read, and
// what was answered but not written is handed back (Scanned), nothing lost or answered twice.
func TestAnswerPausesWhenTheClientDoesNotRead(t *testing.T) {
	l := newLoop(t, 64)
	client, fa := aloneClient(t)
	if err := client.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptInt(fa, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	startAnswering(t, l, fa, func(r Result) { done <- r })
	sent := bytes.Repeat(closeSync, 20000) // far more answers than both socket buffers hold
	go func() { _, _ = client.Write(sent) }()
	r := <-done
	if r.Err != nil || !r.Paused || len(r.Leftover[AToB]) == 0 {
		t.Fatalf("result %+v, want a pause at an unanswered message", r.Err)
	}
	_ = unix.Shutdown(fa, unix.SHUT_WR) // the client reads to the end of what was written
	_ = client.SetReadDeadline(time.Now().Add(wait))
	var got []byte
	for {
		var b [4096]byte
		n, err := client.Read(b[:])
		got = append(got, b[:n]...)
		if err != nil {
			break
		}
	}
	_ = unix.Close(fa)
	got = append(got, r.Leftover[BToA][:r.Scanned[BToA]]...)
	answers := countMessages(t, got)
	if !bytes.Equal(got, bytes.Repeat(answered, answers/2+1)[:len(got)]) {
		t.Fatal("the answers written and handed back are not the answers in order")
	}
	// Each message of closeSync is answered by one message: the pair paused at message
	// number answers, holding it and what it read after.
	next := answers / 2 * len(closeSync)
	if answers%2 == 1 {
		next += len(closeSync) - 5
	}
	if rest := sent[next:]; !bytes.HasPrefix(rest, r.Leftover[AToB]) {
		t.Fatalf("%d messages answered, then the pair holds %q, want the rest from there", answers, r.Leftover[AToB][:min(20, len(r.Leftover[AToB]))])
	}
}

// countMessages counts the whole PostgreSQL messages in b, which must hold nothing else.
func countMessages(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		if len(b) < 5 || len(b) < 1+int(binary.BigEndian.Uint32(b[1:])) {
			t.Fatalf("a message cut short: %q", b)
		}
		b = b[1+int(binary.BigEndian.Uint32(b[1:])):]
		n++
	}
	return n
}

// Where B is plugged in, what the Watch would answer is Pause: B's answers may be on their way.
func TestAnswerWithBIsPause(t *testing.T) {
	l := newLoop(t, 0)
	var mu sync.Mutex
	var h *Handle
	r := startPair(t, l, [2]Framer{PGWatching('C', 'S'), nil}, answerAll(&h, &mu))
	mu.Lock()
	h = r.handle
	mu.Unlock()
	if _, err := r.client.Write(closeSync); err != nil {
		t.Fatal(err)
	}
	if res := r.result(t); res.Err != nil || !res.Paused || len(res.Leftover[AToB]) < 9 || !bytes.HasPrefix(closeSync, res.Leftover[AToB]) {
		t.Fatalf("result %+v", res)
	}
}

// A full buffer of messages each replaced by a longer one (a client's statements renamed on
// the engine connection) grows the buffer once, not once per message, and the buffer shrinks
// back to the loop's size once what it held is written.
func TestReplaceGrowsAFullBufferOnce(t *testing.T) {
	const size = 1024
	l := newLoop(t, size)
	var ahead, want []byte
	for len(ahead)+17 <= size {
		ahead = append(ahead, pgMsg('B', []byte("stmtcache_1\x00"))...)
		want = append(want, pgMsg('B', []byte("stmtcache_long_name_1\x00"))...)
	}
	var mu sync.Mutex
	var r *relayed
	buffers := map[*byte]int{} // each buffer the stream had, by its first byte, and its size
	watch := func(d Direction, msg []byte) Verdict {
		mu.Lock()
		defer mu.Unlock()
		buf := r.handle.p.st[AToB].buf
		buffers[&buf[0]] = len(buf)
		return r.handle.Replacing(want[:len(msg)+10])
	}
	mu.Lock()
	r = startPair(t, l, [2]Framer{PGWatching('B'), nil}, watch, func(p *Pair) { p.Ahead = ahead })
	mu.Unlock()
	if got := readN(t, r.server, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("relayed %q", got)
	}
	sizes := make(chan int, 1)
	l.do(func() { sizes <- len(r.handle.p.st[AToB].buf) })
	if n := <-sizes; n != size {
		t.Fatalf("after the renamed messages were written, the buffer holds %d bytes, want %d", n, size)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(buffers) > 2 {
		t.Fatalf("%d buffers for one full buffer of renamed messages, want the loop's and one grown", len(buffers))
	}
	r.handle.Stop()
	r.result(t)
}

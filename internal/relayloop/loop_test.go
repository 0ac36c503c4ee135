//go:build linux

package relayloop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// wait bounds how long a test waits for an event that must come; it is never a speed check.
const wait = 30 * time.Second

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept()
		ch <- res{c, err}
	}()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return a.(*net.TCPConn), r.c.(*net.TCPConn)
}

// detached takes the file descriptors of two connections' sockets (Detach), failing the test
// when it cannot.
func detached(t testing.TB, a, b *net.TCPConn) (int, int) {
	t.Helper()
	fa, err := Detach(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := Detach(b)
	if err != nil {
		t.Fatal(err)
	}
	return fa, fb
}

// relayed is a running pair: the test talks through client (relayed to and from server).
type relayed struct {
	client, server *net.TCPConn
	done           chan Result
	handle         *Handle
}

// startPair relays between two loopback connections: the test's client end is relayed to its
// server end through the loop.
func startPair(t testing.TB, l *Loop, framing [2]Framer, watch func(Direction, []byte) Verdict, opts ...func(*Pair)) *relayed {
	t.Helper()
	client, a := tcpPair(t)
	b, server := tcpPair(t)
	fa, fb := detached(t, a, b)
	r := &relayed{client: client, server: server, done: make(chan Result, 1)}
	t.Cleanup(func() { client.Close(); server.Close() })
	p := Pair{A: fa, B: fb, Framing: framing, Watch: watch, Done: func(res Result) {
		_ = unix.Close(fa)
		_ = unix.Close(fb)
		r.done <- res
	}}
	for _, opt := range opts {
		opt(&p)
	}
	var err error
	r.handle, err = l.Add(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *relayed) result(t testing.TB) Result {
	t.Helper()
	select {
	case res := <-r.done:
		return res
	case <-time.After(wait):
		t.Fatal("the pair did not stop")
		return Result{}
	}
}

func newLoop(t testing.TB, buf int) *Loop {
	t.Helper()
	l, err := New(buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func pgMsg(typ byte, body []byte) []byte {
	m := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(m[1:], uint32(4+len(body)))
	return append(m, body...)
}

func readN(t testing.TB, c net.Conn, n int) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

// writeChunks writes b in pieces of the given sizes (cycled), so that the loop sees messages
// split anywhere: inside headers, inside bodies, several in one read.
func writeChunks(c net.Conn, b []byte, sizes []int) error {
	for i := 0; len(b) > 0; i++ {
		n := min(len(b), max(1, sizes[i%len(sizes)]))
		if _, err := c.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Whatever the message sizes (beyond the buffer too) and however the writes split them, each
// direction arrives intact and in order, and the Watch sees exactly the watched messages.
func TestRelayKeepsStreamsAndSeesWatchedMessages(t *testing.T) {
	l := newLoop(t, 64) // a small buffer: messages larger than it must stream through
	rapid.Check(t, func(rt *rapid.T) {
		var mu sync.Mutex
		var seen [2][][]byte
		watch := func(d Direction, msg []byte) Verdict {
			mu.Lock()
			seen[d] = append(seen[d], append([]byte(nil), msg...))
			mu.Unlock()
			return Relay
		}
		r := startPair(t, l, [2]Framer{PGWatching('Q', 'X'), PGWatching('Z', 'E')}, watch)
		var want [2][][]byte
		var stream [2][]byte
		for d, types := range [2][]byte{{'Q', 'X', 'P', 'd'}, {'Z', 'E', 'D', 'T'}} {
			msgs := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) []byte {
				typ := rapid.SampledFrom(types).Draw(rt, "type")
				n := rapid.IntRange(0, 200).Draw(rt, "body")
				if typ == 'Q' || typ == 'X' || typ == 'Z' || typ == 'E' {
					n = min(n, 64-5) // watched messages fit the buffer
				}
				return pgMsg(typ, bytes.Repeat([]byte{byte(n)}, n))
			}), 1, 30).Draw(rt, "messages")
			for _, m := range msgs {
				stream[d] = append(stream[d], m...)
				if m[0] == 'Q' || m[0] == 'X' || m[0] == 'Z' || m[0] == 'E' {
					want[d] = append(want[d], m)
				}
			}
		}
		sizes := rapid.SliceOfN(rapid.IntRange(1, 100), 1, 10).Draw(rt, "write sizes")
		errs := make(chan error, 2)
		go func() { errs <- writeChunks(r.client, stream[AToB], sizes) }()
		go func() { errs <- writeChunks(r.server, stream[BToA], sizes) }()
		gotB := readN(t, r.server, len(stream[AToB]))
		gotA := readN(t, r.client, len(stream[BToA]))
		for range 2 {
			if err := <-errs; err != nil {
				rt.Fatal(err)
			}
		}
		if !bytes.Equal(gotB, stream[AToB]) || !bytes.Equal(gotA, stream[BToA]) {
			rt.Fatal("a relayed stream differs from what was sent")
		}
		r.handle.Stop()
		if res := r.result(t); !errors.Is(res.Err, ErrStopped) {
			rt.Fatalf("stopped pair: %v", res.Err)
		}
		for d := range 2 {
			if len(seen[d]) != len(want[d]) {
				rt.Fatalf("%v: watched %d messages, want %d", Direction(d), len(seen[d]), len(want[d]))
			}
			for i := range want[d] {
				if !bytes.Equal(seen[d][i], want[d][i]) {
					rt.Fatalf("%v: watched message %d differs", Direction(d), i)
				}
			}
		}
	})
}

// A side that closes its end stops the pair after what it sent before is delivered.
func TestPeerCloseEitherSide(t *testing.T) {
	l := newLoop(t, 0)
	for _, closer := range []Direction{AToB, BToA} {
		t.Run(closer.String(), func(t *testing.T) {
			r := startPair(t, l, [2]Framer{PGWatching(), PGWatching()}, nil)
			from, to := r.client, r.server
			if closer == BToA {
				from, to = r.server, r.client
			}
			last := pgMsg('D', []byte("the last words"))
			if _, err := from.Write(last); err != nil {
				t.Fatal(err)
			}
			_ = from.Close()
			if got := readN(t, to, len(last)); !bytes.Equal(got, last) {
				t.Fatalf("got %q", got)
			}
			res := r.result(t)
			if !errors.Is(res.Err, ErrClosed) || res.Side != closer {
				t.Fatalf("result %v on %v, want ErrClosed on %v", res.Err, res.Side, closer)
			}
			// Done closed the loop's sockets: the other end sees the connection end.
			_ = to.SetReadDeadline(time.Now().Add(wait))
			if n, err := to.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("after the pair stopped: read %d, %v; want EOF", n, err)
			}
		})
	}
}

// A receiver that does not read holds the sender back: the loop keeps at most its buffer
// and the sockets' own, and everything arrives once the receiver reads.
func TestBackpressureWhenReceiverDoesNotRead(t *testing.T) {
	l := newLoop(t, 0)
	r := startPair(t, l, [2]Framer{nil, PGWatching('Z')}, func(Direction, []byte) Verdict { return Relay })
	body := bytes.Repeat([]byte("x"), 1<<20)
	msg := pgMsg('D', body)
	total := 64 * len(msg)
	stream := bytes.Repeat(msg, 64)
	// The server writes 64 MiB to a client that does not read: the write must stall.
	_ = r.server.SetWriteDeadline(time.Now().Add(3 * time.Second))
	n, err := r.server.Write(stream)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("writing 64 MiB to a client that does not read: %d bytes, %v (want a stall)", n, err)
	}
	if n > total/2 {
		t.Fatalf("the relay took %d bytes for a client that reads nothing", n)
	}
	_ = r.server.SetWriteDeadline(time.Time{})
	errs := make(chan error, 1)
	go func() { _, err := r.server.Write(stream[n:]); errs <- err }()
	if got := readN(t, r.client, total); !bytes.Equal(got, stream) {
		t.Fatal("the stream arrived changed after the stall")
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// A watched message larger than the buffer cannot be seen whole: the pair pauses before it,
// after relaying what came first, and hands back what it read of it.
func TestWatchedMessageLargerThanBuffer(t *testing.T) {
	l := newLoop(t, 64)
	r := startPair(t, l, [2]Framer{nil, PGWatching('E')}, func(Direction, []byte) Verdict { return Relay })
	first, big := pgMsg('D', []byte("row")), pgMsg('E', bytes.Repeat([]byte("e"), 100))
	if _, err := r.server.Write(append(append([]byte(nil), first...), big...)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, r.client, len(first)); !bytes.Equal(got, first) {
		t.Fatalf("got %q", got)
	}
	res := r.result(t)
	if !errors.Is(res.Err, ErrMessageTooLarge) || res.Side != BToA || !res.Paused {
		t.Fatalf("result %+v", res)
	}
	if left := res.Leftover[BToA]; len(left) == 0 || !bytes.HasPrefix(big, left) {
		t.Fatalf("leftover %q, want the start of the large message", left)
	}
}

func TestMalformedLength(t *testing.T) {
	l := newLoop(t, 0)
	r := startPair(t, l, [2]Framer{PGWatching(), nil}, nil)
	if _, err := r.client.Write([]byte{'Q', 0, 0, 0, 2}); err != nil {
		t.Fatal(err)
	}
	if res := r.result(t); !errors.Is(res.Err, ErrMalformed) {
		t.Fatalf("result %v", res.Err)
	}
}

// Pause relays what came before the message and hands the rest back, the message first;
// Drop swallows a message; End stops after relaying it.
func TestVerdicts(t *testing.T) {
	l := newLoop(t, 0)
	before, drop, pause, after := pgMsg('D', []byte("row")), pgMsg('N', []byte("notice")), pgMsg('Z', []byte{'I'}), pgMsg('D', []byte("next"))
	watch := func(_ Direction, msg []byte) Verdict {
		switch msg[0] {
		case 'N':
			return Drop
		case 'Z':
			return Pause
		case 'X':
			return End
		}
		return Relay
	}
	r := startPair(t, l, [2]Framer{PGWatching('X'), PGWatching('Z', 'N')}, watch)
	if _, err := r.server.Write(bytes.Join([][]byte{before, drop, pause, after}, nil)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, r.client, len(before)); !bytes.Equal(got, before) {
		t.Fatalf("got %q", got)
	}
	res := r.result(t)
	if res.Err != nil || !res.Paused {
		t.Fatalf("result %+v", res)
	}
	// The whole write may not have been read at the pause: the rest is still in the socket.
	left := res.Leftover[BToA]
	if want := append(append([]byte(nil), pause...), after...); !bytes.HasPrefix(want, left) || !bytes.HasPrefix(left, pause) {
		t.Fatalf("leftover %q, want the paused message first, then %q", left, after)
	}

	r = startPair(t, l, [2]Framer{PGWatching('X'), PGWatching('Z', 'N')}, watch)
	q, terminate := pgMsg('Q', []byte("select")), pgMsg('X', nil)
	if _, err := r.client.Write(append(append([]byte(nil), q...), terminate...)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, r.server, len(q)+len(terminate)); !bytes.Equal(got, append(q, terminate...)) {
		t.Fatalf("got %q", got)
	}
	if res := r.result(t); res.Err != nil || res.Paused {
		t.Fatalf("result %+v", res)
	}
}

// Closing the loop stops its pairs.
func TestCloseStopsPairs(t *testing.T) {
	l, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	r := startPair(t, l, [2]Framer{}, nil)
	l.Close()
	if res := r.result(t); !errors.Is(res.Err, ErrStopped) {
		t.Fatalf("result %v", res.Err)
	}
	r = startPair(t, l, [2]Framer{}, nil)
	if res := r.result(t); !errors.Is(res.Err, ErrStopped) {
		t.Fatalf("a pair added to a closed loop: %v", res.Err)
	}
}

// kept is how many buffers the loop keeps for its next pairs.
func (l *Loop) keptBuffers() int {
	l.bufs.mu.Lock()
	defer l.bufs.mu.Unlock()
	return len(l.bufs.free)
}

// A pair that stopped leaves its two buffers to the loop's next pairs (once its turn is over),
// and a pair on reused buffers relays only its own bytes: nothing of the last pair's shows
// through, in either direction, whatever the lengths.
func TestStoppedPairsBuffersServeTheNext(t *testing.T) {
	l := newLoop(t, 64)
	watch := func(_ Direction, msg []byte) Verdict {
		if msg[0] == 'Z' {
			return Pause
		}
		return Relay
	}
	long, short := pgMsg('D', bytes.Repeat([]byte("old"), 15)), pgMsg('D', []byte("new"))
	for i, m := range [][]byte{long, short, long, short} {
		r := startPair(t, l, [2]Framer{PGWatching(), PGWatching('Z')}, watch)
		if k := l.keptBuffers(); i > 0 && k != 0 {
			t.Fatalf("pair %d: %d buffers still kept after it took two", i, k)
		}
		if _, err := r.client.Write(m); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, r.server, len(m)); !bytes.Equal(got, m) {
			t.Fatalf("pair %d: the server got %q, want %q", i, got, m)
		}
		if _, err := r.server.Write(append(append([]byte(nil), m...), pgMsg('Z', []byte{'I'})...)); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, r.client, len(m)); !bytes.Equal(got, m) {
			t.Fatalf("pair %d: the client got %q, want %q", i, got, m)
		}
		if res := r.result(t); !res.Paused || !bytes.Equal(res.Leftover[BToA], pgMsg('Z', []byte{'I'})) {
			t.Fatalf("pair %d: result %+v", i, res)
		}
		for deadline := time.Now().Add(wait); l.keptBuffers() != 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pair %d: %d buffers kept after it stopped, want its 2", i, l.keptBuffers())
			}
		}
	}
}

// A ring's turn that has nothing to submit and no completion flagged as waiting waits at once:
// a look first (an io_uring_enter that does not wait) would find nothing. Relaying request and
// answer, the loop's looks find something nearly every time.
func TestRingWaitsWithoutLookingForNothing(t *testing.T) {
	onRing(t)
	l := newLoop(t, 0)
	if !l.ring.flagged {
		t.Skip("a kernel that flags no deferred completions: every turn looks first")
	}
	r := startPair(t, l, [2]Framer{nil, PGWatching('Z')}, func(Direction, []byte) Verdict { return Relay })
	q, z := pgMsg('Q', []byte("select 1\x00")), pgMsg('Z', []byte{'I'})
	exchange := func() {
		t.Helper()
		if _, err := r.client.Write(q); err != nil {
			t.Fatal(err)
		}
		readN(t, r.server, len(q))
		if _, err := r.server.Write(z); err != nil {
			t.Fatal(err)
		}
		readN(t, r.client, len(z))
	}
	exchange()
	before := l.emptyLooks.Load()
	const n = 40
	for range n {
		exchange()
	}
	if empty := l.emptyLooks.Load() - before; empty > n/4 {
		t.Fatalf("%d looks that found nothing over %d exchanges (each a wait of its own), want few", empty, n)
	}
}

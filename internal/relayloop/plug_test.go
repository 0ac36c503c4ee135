//go:build linux

package relayloop

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A pair started without B holds A's first message until B is plugged in, relays it then,
// unplugs B at the message its Watch says Unplug at (B's socket handed back, the rest of its
// bytes with it), and holds A's next message until the next B: a client kept across engine
// connections. The counting framer counts the unwatched rows that passed.
func TestPlugAndUnplug(t *testing.T) {
	l := newLoop(t, 0)
	client, fa := aloneClient(t)
	var mu sync.Mutex
	plugged := false
	unplugged := make(chan []byte, 1)
	held := make(chan []byte, 4)
	rows := &PG{Watched: [256]bool{'Z': true}, Counted: [256]bool{'D': true}}
	var counted []int64
	done := make(chan Result, 1)
	h, err := l.Add(Pair{A: fa, B: -1,
		Framing: [2]Framer{PGWatching('Q'), rows},
		Watch: func(d Direction, msg []byte) Verdict {
			mu.Lock()
			defer mu.Unlock()
			if d == BToA {
				counted = append(counted, rows.Count, rows.Bytes)
				return Unplug
			}
			if !plugged {
				held <- append([]byte(nil), msg...)
				return Hold
			}
			return Relay
		},
		Unplugged: func(fd int, rest []byte) {
			mu.Lock()
			plugged = false
			mu.Unlock()
			unplugged <- rest
			_ = unix.Close(fd)
		},
		Done: func(r Result) { _ = unix.Close(fa); done <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		q := pgMsg('Q', []byte{'s', byte(round)})
		if _, err := client.Write(q); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-held:
			if !bytes.Equal(m, q) {
				t.Fatalf("held %q, want %q", m, q)
			}
		case <-time.After(wait):
			t.Fatal("the first message was not held")
		}
		b, server := tcpPair(t)
		fb, err := Detach(b)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		plugged = true
		mu.Unlock()
		h.Resume(fb)
		if got := readN(t, server, len(q)); !bytes.Equal(got, q) {
			t.Fatalf("B got %q, want %q", got, q)
		}
		answer := bytes.Join([][]byte{pgMsg('D', []byte("row1")), pgMsg('D', []byte("r2")), pgMsg('Z', []byte{'I'})}, nil)
		late := pgMsg('N', []byte("late"))
		if _, err := server.Write(append(append([]byte(nil), answer...), late...)); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, client, len(answer)); !bytes.Equal(got, answer) {
			t.Fatalf("A got %q, want %q", got, answer)
		}
		select {
		case rest := <-unplugged:
			// The late message came in the same read, or stays in B's socket.
			if len(rest) != 0 && !bytes.Equal(rest, late) {
				t.Fatalf("rest %q", rest)
			}
		case <-time.After(wait):
			t.Fatal("B was not unplugged")
		}
		server.Close()
	}
	mu.Lock()
	want := []int64{2, 9 + 7, 4, 2 * (9 + 7)}
	for i := range want {
		if counted[i] != want[i] {
			mu.Unlock()
			t.Fatalf("counts %v, want %v", counted, want)
		}
	}
	mu.Unlock()
	client.Close()
	select {
	case r := <-done:
		if r.B != -1 {
			t.Fatalf("stopped with B %d plugged in", r.B)
		}
	case <-time.After(wait):
		t.Fatal("the pair did not stop when A closed")
	}
}

// aloneClient is a loopback connection whose other end is detached for a pair's A: the test
// talks through client.
func aloneClient(t *testing.T) (client *net.TCPConn, fa int) {
	t.Helper()
	client, a := tcpPair(t)
	t.Cleanup(func() { client.Close() })
	fa, err := Detach(a)
	if err != nil {
		t.Fatal(err)
	}
	return client, fa
}

// A lent Conn is out of Go's poller (the loop relays it) and comes back on its next use, with
// a deadline set while it was lent.
func TestConnLendAndReturn(t *testing.T) {
	x, y := tcpPair(t)
	t.Cleanup(func() { y.Close() })
	c := NewConn(x)
	fd, err := c.Lend()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Lent() || c.FD() != fd || c.Pending() {
		t.Fatal("a lent socket with nothing to read")
	}
	if _, err := y.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(wait); !c.Pending(); {
		if time.Now().After(deadline) {
			t.Fatal("bytes sent to a lent socket are not seen pending")
		}
		time.Sleep(time.Millisecond)
	}
	var b [2]byte
	if n, _ := unix.Read(fd, b[:]); n != 2 || string(b[:]) != "hi" {
		t.Fatalf("read %q from the lent socket", b[:n])
	}
	if err := c.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(b[:]); !isTimeout(err) {
		t.Fatalf("a deadline set while lent: read gave %v", err)
	}
	if c.Lent() {
		t.Fatal("still lent after a read")
	}
	_ = c.SetReadDeadline(time.Time{})
	if _, err := c.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, y, 2); string(got) != "ok" {
		t.Fatalf("got %q", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(y); err != nil {
		t.Fatal(err)
	}
}

// A statement's small answer, and its reply once there, are written and read on the lent
// socket itself: it stays lent, not brought back into Go's poller at every statement. A read
// with nothing coming within lentWait, and a write too big for the socket's buffer, take it
// back, and every byte arrives; a peer's end reads as io.EOF.
func TestConnLentReadsAndWritesInPlace(t *testing.T) {
	x, y := tcpPair(t)
	t.Cleanup(func() { y.Close() })
	c := NewConn(x)
	if _, err := c.Lend(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("query")); err != nil || !c.Lent() {
		t.Fatalf("a small write: err %v, lent %v", err, c.Lent())
	}
	if got := readN(t, y, 5); string(got) != "query" {
		t.Fatalf("got %q", got)
	}
	if _, err := y.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "reply" || !c.Lent() {
		t.Fatalf("a reply there: %q, err %v, lent %v", b, err, c.Lent())
	}

	got := make(chan string, 1)
	go func() {
		b := make([]byte, 4)
		n, err := io.ReadFull(c, b)
		got <- fmt.Sprint(string(b[:n]), err)
	}()
	for deadline := time.Now().Add(wait); c.Lent(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a read with nothing coming kept the socket out of Go's poller")
		}
	}
	if _, err := y.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r != "late<nil>" {
		t.Fatalf("a late reply read as %q", r)
	}

	if _, err := c.Lend(); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB: more than loopback buffers hold
	read := make(chan []byte, 1)
	go func() { read <- readN(t, y, len(big)) }()
	if n, err := c.Write(big); err != nil || n != len(big) {
		t.Fatalf("a big write: %d bytes, err %v", n, err)
	}
	if !bytes.Equal(<-read, big) {
		t.Fatal("a big write arrived changed")
	}

	if _, err := c.Lend(); err != nil {
		t.Fatal(err)
	}
	_ = y.Close()
	for deadline := time.Now().Add(wait); !c.Pending(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the peer's end is not seen pending")
		}
	}
	if n, err := c.Read(b); n != 0 || err != io.EOF {
		t.Fatalf("the peer's end read as %d, %v", n, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// isKept reports whether l keeps fd idle (Pair.KeepB): in its epoll set, or on a ring known
// non-blocking.
func isKept(l *Loop, fd int) bool {
	kept.Lock()
	defer kept.Unlock()
	return kept.m.get(fd) == l
}

// A B unplugged from a KeepB pair stays in the loop's epoll set, so that each later
// transaction plugs it in and out without an epoll_ctl; it leaves the set when its owner
// takes it back (Conn's next write releases it) and when its peer speaks between
// transactions, whose bytes the next transaction then relays. On a ring, which keeps no
// receive for an idle B, it is kept as known non-blocking (no fcntl at its plugs), and what its
// peer says between transactions is relayed by the next all the same.
func TestKeptBPlugsInWithoutEpollCtl(t *testing.T) {
	l := newLoop(t, 0)
	epoll := l.Backend() == BackendEpoll
	client, a := tcpPair(t)
	t.Cleanup(func() { client.Close() })
	fa, err := Detach(a)
	if err != nil {
		t.Fatal(err)
	}
	b, server := tcpPair(t)
	t.Cleanup(func() { server.Close() })
	bc := NewConn(b)
	t.Cleanup(func() { _ = bc.Close() })
	var mu sync.Mutex
	var fb int
	h := l.NewHandle()
	unplugged := make(chan int, 1)
	done := make(chan Result, 1)
	err = h.Start(Pair{A: fa, B: -1, KeepB: true,
		Framing: [2]Framer{PGWatching('Q'), PGWatching('Z')},
		Watch: func(d Direction, msg []byte) Verdict {
			if d == BToA {
				return Unplug
			}
			mu.Lock()
			defer mu.Unlock()
			if err := h.Plug(fb); err != nil {
				t.Error(err)
				return Hold
			}
			return Relay
		},
		Unplugged: func(fd int, _ []byte) { unplugged <- fd },
		Done:      func(r Result) { _ = unix.Close(fa); done <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	lend := func() int {
		t.Helper()
		fd, err := bc.Lend()
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		fb = fd
		mu.Unlock()
		return fd
	}
	z := pgMsg('Z', []byte{'I'})
	// transaction relays a query and its answer (rows, then z), and returns the system calls
	// the loop made for B's sake beyond reading and writing: epoll_ctl calls, or on a ring the
	// enters that only awaited a cancelled receive; and the fcntl calls making B non-blocking.
	transaction := func(extra, rows []byte) int64 {
		t.Helper()
		before := l.ctls.Load() + l.waits.Load() + l.fcntls.Load()
		q := pgMsg('Q', []byte("select 1\x00"))
		if _, err := client.Write(q); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, server, len(q)); !bytes.Equal(got, q) {
			t.Fatalf("B got %q, want %q", got, q)
		}
		if _, err := server.Write(append(append([]byte(nil), rows...), z...)); err != nil {
			t.Fatal(err)
		}
		want := append(append(append([]byte(nil), extra...), rows...), z...)
		if got := readN(t, client, len(want)); !bytes.Equal(got, want) {
			t.Fatalf("A got %q, want %q", got, want)
		}
		select {
		case <-unplugged:
		case <-time.After(wait):
			t.Fatal("B was not unplugged")
		}
		return l.ctls.Load() + l.waits.Load() + l.fcntls.Load() - before
	}
	fd := lend()
	transaction(nil, nil) // B enters the set
	if !isKept(l, fd) {
		t.Fatal("B not kept at Unplug")
	}
	for i := range 3 {
		if n := transaction(nil, nil); n != 0 {
			t.Fatalf("transaction %d on a kept B: %d epoll_ctl or fcntl calls or enters awaiting a cancel, want 0", i, n)
		}
	}
	// An answer of many buffers (a ring receives it multishot), then small ones again.
	var rows []byte
	for len(rows) < 5*ringBufBytes {
		rows = append(rows, pgMsg('D', bytes.Repeat([]byte{byte('a' + len(rows)%26)}, 700))...)
	}
	transaction(nil, rows)
	transaction(nil, nil)
	if n := transaction(nil, nil); n != 0 {
		t.Fatalf("a small answer after a large one: %d epoll_ctl or fcntl calls or enters awaiting a cancel, want 0", n)
	}
	// Its owner takes it back: out of the set before Go's poller gets the socket.
	if _, err := bc.Write([]byte{}); err != nil {
		t.Fatal(err)
	}
	if isKept(l, fd) {
		t.Fatal("B still in the loop's set once its owner took it back")
	}
	fd = lend()
	transaction(nil, nil)
	// Its peer speaks between transactions: B leaves the set (level-triggered epoll would
	// report it for ever), and the next transaction relays the notice first.
	notice := pgMsg('N', []byte("idle"))
	if _, err := server.Write(notice); err != nil {
		t.Fatal(err)
	}
	if !epoll {
		time.Sleep(10 * time.Millisecond) // the notice waits in B's socket
	}
	for deadline := time.Now().Add(wait); epoll && isKept(l, fd); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a kept B whose peer spoke stayed in the set")
		}
	}
	transaction(notice, nil)
	client.Close()
	select {
	case r := <-done:
		if !errors.Is(r.Err, ErrClosed) {
			t.Fatalf("stopped with %v", r.Err)
		}
	case <-time.After(wait):
		t.Fatal("the pair did not stop when A closed")
	}
}

// A B that stays plugged in from answer to answer (StayB: a MySQL client's engine connection
// kept between its statements) keeps one receive armed on a ring, as A does, rather than one
// armed per answer; unplugged, it hands back nothing it did not get, and plugged in again it
// relays as before.
func TestStayingBKeepsItsReceiveArmed(t *testing.T) {
	onRing(t)
	l := newLoop(t, 0)
	const (
		relay  = iota
		unplug // at B's next answer's end
		out    // B plugged in again at A's next query
	)
	state := relay
	var mu sync.Mutex
	unplugged := make(chan []byte, 1)
	var r *relayed
	var fb int
	r = startPair(t, l, [2]Framer{PGWatching('Q'), PGWatching('Z')}, func(d Direction, _ []byte) Verdict {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case d == BToA && state == unplug:
			state = out
			return Unplug
		case d == AToB && state == out:
			state = relay
			if err := r.handle.Plug(fb); err != nil {
				t.Error(err)
				return Hold
			}
		}
		return Relay
	}, func(p *Pair) {
		p.KeepB, p.StayB = true, true
		fb = p.B
		p.Unplugged = func(_ int, rest []byte) { unplugged <- rest }
	})
	z := pgMsg('Z', []byte{'I'})
	exchange := func(i int) {
		t.Helper()
		q := pgMsg('Q', []byte(fmt.Sprintf("select %d\x00", i)))
		if _, err := r.client.Write(q); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, r.server, len(q)); !bytes.Equal(got, q) {
			t.Fatalf("B got %q, want %q", got, q)
		}
		answer := append(pgMsg('D', []byte(fmt.Sprintf("row %d", i))), z...)
		if _, err := r.server.Write(answer); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, r.client, len(answer)); !bytes.Equal(got, answer) {
			t.Fatalf("A got %q, want %q", got, answer)
		}
	}
	exchange(0) // both receives armed
	before := l.recvArms.Load()
	const n = 20
	for i := 1; i <= n; i++ {
		exchange(i)
	}
	if arms := l.recvArms.Load() - before; arms > 2 {
		t.Fatalf("%d receives armed over %d answers of a B that stays plugged in, want its one kept armed", arms, n)
	}
	mu.Lock()
	state = unplug
	mu.Unlock()
	exchange(n + 1)
	select {
	case rest := <-unplugged:
		if len(rest) != 0 {
			t.Fatalf("unplugged with %q left over, want nothing", rest)
		}
	case <-time.After(wait):
		t.Fatal("B was not unplugged")
	}
	exchange(n + 2) // plugged in again by the query's Watch
	exchange(n + 3)
}

// On a ring, the first receive of a B just plugged in (the request it answers goes out in the
// same enter) arms the socket's poll without a first attempt, which would find nothing; an
// answer already waiting when B is plugged in (its peer spoke first) is received all the same.
func TestPluggedBsFirstReceivePollsFirst(t *testing.T) {
	onRing(t)
	l := newLoop(t, 0)
	client, a := tcpPair(t)
	b, server := tcpPair(t)
	t.Cleanup(func() { client.Close(); server.Close() })
	fa, fb := detached(t, a, b)
	t.Cleanup(func() { Release(fb); _ = unix.Close(fb) })
	h := l.NewHandle()
	unplugged := make(chan struct{}, 1)
	err := h.Start(Pair{A: fa, B: -1, KeepB: true,
		Framing: [2]Framer{PGWatching('Q'), PGWatching('Z')},
		Watch: func(d Direction, msg []byte) Verdict {
			if d == BToA {
				return Unplug
			}
			if err := h.Plug(fb); err != nil {
				t.Error(err)
				return Hold
			}
			return Relay
		},
		Unplugged: func(int, []byte) { unplugged <- struct{}{} },
		Done:      func(Result) { _ = unix.Close(fa) },
	})
	if err != nil {
		t.Fatal(err)
	}
	z := pgMsg('Z', []byte{'I'})
	transaction := func(early []byte) {
		t.Helper()
		q := pgMsg('Q', []byte("select 1\x00"))
		if _, err := client.Write(q); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, server, len(q)); !bytes.Equal(got, q) {
			t.Fatalf("B got %q, want %q", got, q)
		}
		if _, err := server.Write(z); err != nil {
			t.Fatal(err)
		}
		want := append(append([]byte(nil), early...), z...)
		if got := readN(t, client, len(want)); !bytes.Equal(got, want) {
			t.Fatalf("A got %q, want %q", got, want)
		}
		select {
		case <-unplugged:
		case <-time.After(wait):
			t.Fatal("B was not unplugged")
		}
	}
	before := l.pollFirsts.Load()
	const n = 5
	for range n {
		transaction(nil)
	}
	if got := l.pollFirsts.Load() - before; got != n {
		t.Fatalf("%d of %d plugged-in Bs' first receives polled first", got, n)
	}
	// B's peer speaks while B is out: the bytes wait in its socket, and the receive armed at the
	// next plug (poll first) finds them at once.
	notice := pgMsg('N', []byte("idle"))
	if _, err := server.Write(notice); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the notice waits in B's socket
	transaction(notice)
	transaction(nil)
}

//go:build linux

package relayloop

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"
)

// A client (A) that stops reading an answer stops its pair with ErrWriteTimeout once the
// writes to it made no progress for WriteTimeout; a client reading slowly but steadily, and
// one idle between answers for longer than the timeout, keep theirs.
func TestWriteTimeoutStopsAPairWhoseClientStoppedReading(t *testing.T) {
	l := newLoop(t, 0)
	timeout := func(p *Pair) { p.WriteTimeout = 300 * time.Millisecond }
	relayAll := func(Direction, []byte) Verdict { return Relay }
	framing := [2]Framer{PGWatching('Q'), PGWatching('Z')}
	answer := bytes.Repeat(pgMsg('D', bytes.Repeat([]byte("x"), 64<<10)), 192) // 12 MiB

	stopped := startPair(t, l, framing, relayAll, timeout)
	idle := startPair(t, l, framing, relayAll, timeout)
	steady := startPair(t, l, framing, relayAll, timeout)
	rc, err := stopped.client.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1) })
	go func() { _, _ = stopped.server.Write(answer) }()
	if res := stopped.result(t); !errors.Is(res.Err, ErrWriteTimeout) || res.Side != BToA {
		t.Fatalf("a client that reads nothing: got %v on %v, want %v on b->a", res.Err, res.Side, ErrWriteTimeout)
	}

	// The steady client reads 64 KiB every 20 ms: at times less, between two timeouts, than
	// the third of its socket's send buffer that makes the socket writable again.
	go func() { _, _ = steady.server.Write(answer) }()
	got := make([]byte, 0, len(answer))
	buf := make([]byte, 64<<10)
	_ = steady.client.SetReadDeadline(time.Now().Add(wait))
	for len(got) < len(answer) {
		time.Sleep(20 * time.Millisecond)
		n, err := io.ReadFull(steady.client, buf[:min(len(buf), len(answer)-len(got))])
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("the steady client, after %d bytes: %v", len(got), err)
		}
	}
	if !bytes.Equal(got, answer) {
		t.Fatal("the steady client's answer arrived changed")
	}

	msg := pgMsg('Z', []byte{'I'})
	if _, err := idle.server.Write(msg); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, idle.client, len(msg)); !bytes.Equal(got, msg) {
		t.Fatal("the idle client's answer differs")
	}
	select {
	case res := <-idle.done:
		t.Fatalf("an idle pair stopped: %v", res.Err)
	case res := <-steady.done:
		t.Fatalf("the steady pair stopped: %v", res.Err)
	default:
	}
}

// A ring's quiet sends (MSG_DONTWAIT: none waits for A's socket) start no write clock: an
// answer relayed whole costs no clock read, no TCP_INFO read and no timed wait. A client that
// reads nothing still stops its pair (above): what its socket did not take goes in loud sends.
func TestQuietSendsStartNoWriteClock(t *testing.T) {
	onRing(t)
	l := newLoop(t, 0)
	r := startPair(t, l, [2]Framer{nil, PGWatching('Z')}, func(Direction, []byte) Verdict { return Relay },
		func(p *Pair) { p.WriteTimeout = time.Minute })
	r.exchange(t)
	before := l.writeClocks.Load()
	const n = 40
	for range n {
		r.exchange(t)
	}
	// A send the loop finds no room for is loud (its clock runs): a few at most.
	if clocks := l.writeClocks.Load() - before; clocks > n/4 {
		t.Fatalf("%d write clocks started over %d exchanges answered whole, want at most %d", clocks, n, n/4)
	}
}

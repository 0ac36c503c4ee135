//go:build linux

package sockmap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// splicer is a Splicer for the test, or a skip where the host refuses BPF.
func splicer(t testing.TB, parser bool) *Splicer {
	s, err := New(64, parser)
	return orSkip(t, s, err)
}

// orSkip is s, closed when t ends; where the host refuses BPF, t skips.
func orSkip[S interface{ Close() error }](t testing.TB, s S, err error) S {
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no sockmap here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// connPair returns both ends of one loopback TCP connection.
func connPair(t testing.TB) (dialed, accepted *net.TCPConn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); _ = a.Close() })
	return d.(*net.TCPConn), a.(*net.TCPConn)
}

func fd(t testing.TB, c syscall.Conn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rc.Control(func(f uintptr) { n = int(f) }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSplicedPairRelaysBothWays: a client, a relay's two sockets spliced in the kernel and a
// server; any sequence of writes of either end (1 byte to 200 KB, more than the sockets'
// buffers) reaches the other end whole and in order, and a read of either relay socket finds
// nothing.
func TestSplicedPairRelaysBothWays(t *testing.T) {
	for _, parser := range []bool{false, true} {
		t.Run(fmt.Sprintf("parser=%v", parser), func(t *testing.T) { splicedPairRelaysBothWays(t, splicer(t, parser)) })
	}
}

func splicedPairRelaysBothWays(t *testing.T, s *Splicer) {
	rapid.Check(t, func(rt *rapid.T) {
		client, relayA := connPair(t)
		relayB, server := connPair(t)
		if err := s.Splice(fd(t, relayA), fd(t, relayB)); err != nil {
			rt.Fatal(err)
		}
		defer func() { _ = s.Unsplice(fd(t, relayA), fd(t, relayB)) }()
		steps := rapid.IntRange(1, 8).Draw(rt, "steps")
		for i := range steps {
			toServer := rapid.Bool().Draw(rt, "toServer")
			n := rapid.IntRange(1, 200_000).Draw(rt, "n")
			msg := bytes.Repeat([]byte{byte(i + 1)}, n)
			copy(msg, rapid.SliceOfN(rapid.Byte(), 0, min(n, 64)).Draw(rt, "head"))
			from, to := net.Conn(client), net.Conn(server)
			if !toServer {
				from, to = server, client
			}
			werr := make(chan error, 1)
			go func() { _, err := from.Write(msg); werr <- err }()
			got := make([]byte, n)
			_ = to.SetReadDeadline(time.Now().Add(10 * time.Second))
			if k, err := io.ReadFull(to, got); err != nil {
				rt.Fatalf("step %d (toServer %v): read %d of %d bytes: %v", i, toServer, k, n, err)
			}
			if err := <-werr; err != nil {
				rt.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				rt.Fatalf("step %d: the bytes differ", i)
			}
		}
		for _, c := range []*net.TCPConn{relayA, relayB} {
			var b [1]byte
			if n, _, err := unix.Recvfrom(fd(t, c), b[:], unix.MSG_DONTWAIT); err != unix.EAGAIN {
				rt.Fatalf("a relay socket's own read: %d bytes, %v (want none, EAGAIN)", n, err)
			}
		}
	})
}

// TestSpliceRefusesUnreadBytes: a socket with bytes in its receive queue is refused (the
// kernel would hold them until the socket's next arrival: a MySQL greeting never reaching its
// client); once the caller has read them, the pair splices and relays.
func TestSpliceRefusesUnreadBytes(t *testing.T) {
	s := splicer(t, true)
	client, relayA := connPair(t)
	relayB, server := connPair(t)
	if _, err := server.Write([]byte("greeting")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, err := Pending(fd(t, relayB))
		if err != nil {
			t.Fatal(err)
		}
		if p == len(buf) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending %d bytes, want 8", p)
		}
		time.Sleep(time.Millisecond)
	}
	err := s.Splice(fd(t, relayA), fd(t, relayB))
	if err == nil || !strings.Contains(err.Error(), "8 unread bytes") {
		t.Fatalf("Splice with 8 unread bytes: %v", err)
	}
	_ = relayB.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(relayB, buf); err != nil || string(buf) != "greeting" {
		t.Fatalf("reading the refused bytes: %q %v", buf, err)
	}
	if err := s.Splice(fd(t, relayA), fd(t, relayB)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		from, to net.Conn
		text     string
	}{{relayA, client, "greeting"}, {client, server, "answer"}, {server, client, "result"}} {
		// relayA first: the caller passes on what it read, as a relay would
		if _, err := m.from.Write([]byte(m.text)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(m.text))
		_ = m.to.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(m.to, got); err != nil || string(got) != m.text {
			t.Fatalf("%s: got %q, %v", m.text, got, err)
		}
	}
}

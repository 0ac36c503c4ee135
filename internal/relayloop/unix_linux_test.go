//go:build linux

package relayloop

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// unixLeg returns the two ends of a Unix stream socket pair: the loop's (a file descriptor) and
// the engine's (a net.Conn), as when a proxy reaches an engine on its own host through the
// engine's Unix socket (MariaDB's mysqld.sock, PostgreSQL's .s.PGSQL.5432).
func unixLeg(t testing.TB) (int, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[1]), "engine")
	c, err := net.FileConn(f) // a dup: f's descriptor is closed here
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fds[0], c
}

// unixRelayed relays a loopback TCP client to an engine end on a Unix socket.
// small: the client's receive buffer and the loop's send buffer toward it are 4 KiB (the loop's
// sends to the client come out short).
func unixRelayed(t testing.TB, l *Loop, small bool) (client *net.TCPConn, engine net.Conn, done chan Result) {
	t.Helper()
	client, a := tcpPair(t)
	fa, err := Detach(a)
	if err != nil {
		t.Fatal(err)
	}
	if small {
		_ = client.SetReadBuffer(4 << 10)
		if err := unix.SetsockoptInt(fa, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<10); err != nil {
			t.Fatal(err)
		}
	}
	fb, engine := unixLeg(t)
	t.Cleanup(func() { client.Close(); engine.Close() })
	done = make(chan Result, 1)
	if _, err := l.Add(Pair{A: fa, B: fb, Done: func(res Result) {
		_ = unix.Close(fa)
		_ = unix.Close(fb)
		done <- res
	}}); err != nil {
		t.Fatal(err)
	}
	return client, engine, done
}

// An engine leg on a Unix socket relays as a TCP one does, on either backend: requests and
// results of any size (results spanning many of the ring's buffers, and more than the sockets'
// buffers hold), written in pieces of any size, arrive whole and in order, to a client whose
// buffers are small half the time (short sends).
func TestAUnixSocketEngineLegRelaysWholeResults(t *testing.T) {
	l := newLoop(t, 0)
	rapid.Check(t, func(rt *rapid.T) {
		client, engine, done := unixRelayed(t, l, rapid.Bool().Draw(rt, "small client buffers"))
		pieces := rapid.SliceOfN(rapid.IntRange(64, 70_000), 1, 4).Draw(rt, "pieces")
		for i, n := 0, rapid.IntRange(1, 3).Draw(rt, "exchanges"); i < n; i++ {
			req := bytes.Repeat([]byte{byte('a' + i)}, rapid.IntRange(1, 20_000).Draw(rt, "request"))
			res := make([]byte, rapid.IntRange(1, 100_000).Draw(rt, "result"))
			for j := range res {
				res[j] = byte(j*7 + i)
			}
			errs := make(chan error, 1)
			go func() { errs <- writeChunks(client, req, pieces) }()
			if got := readWithin(rt, engine, len(req)); !bytes.Equal(got, req) {
				rt.Fatalf("exchange %d: the engine got a request of %d bytes changed", i, len(req))
			}
			if err := <-errs; err != nil {
				rt.Fatal(err)
			}
			go func() { errs <- writeChunks(engine, res, pieces) }()
			if got := readWithin(rt, client, len(res)); !bytes.Equal(got, res) {
				rt.Fatalf("exchange %d: the client got a result of %d bytes changed", i, len(res))
			}
			if err := <-errs; err != nil {
				rt.Fatal(err)
			}
		}
		_ = client.Close()
		select {
		case res := <-done:
			if !errors.Is(res.Err, ErrClosed) || res.Side != AToB {
				rt.Fatalf("result %v on %v, want ErrClosed on %v", res.Err, res.Side, AToB)
			}
		case <-time.After(wait):
			rt.Fatal("the pair did not stop after its client closed")
		}
	})
}

// A client that closes in the middle of a large result stops the pair, and the engine's end
// learns it: its writes fail (or, had it stopped writing, it reads the end), so an engine
// connection is never left writing to nobody.
func TestAClientClosingMidResultFreesTheUnixEngineLeg(t *testing.T) {
	l := newLoop(t, 0)
	client, engine, done := unixRelayed(t, l, false)
	if _, err := client.Write([]byte("a query")); err != nil {
		t.Fatal(err)
	}
	readN(t, engine, len("a query"))
	wrote := make(chan error, 1)
	go func() { // a result larger than every buffer on the way: the engine blocks in it
		chunk := bytes.Repeat([]byte("r"), 64<<10)
		for range 1024 {
			if _, err := engine.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	readN(t, client, 256<<10)
	_ = client.Close()
	select {
	case res := <-done:
		if res.Err == nil { // ErrClosed, or the send's error: the client reset what it left unread
			t.Fatalf("result %v on %v, want an error", res.Err, res.Side)
		}
	case <-time.After(wait):
		t.Fatal("the pair did not stop after its client closed mid-result")
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("the engine wrote all 64 MiB of its result to a client that had closed")
		}
	case <-time.After(wait):
		t.Fatal("the engine's write still blocks after the pair stopped")
	}
	_ = engine.SetReadDeadline(time.Now().Add(wait))
	if n, err := engine.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, unix.ECONNRESET) {
		t.Fatalf("the engine's end after the pair stopped: read %d, %v; want its end", n, err)
	}
}

// readWithin reads n bytes from c within wait, failing rt (shrinking) when they do not come.
func readWithin(rt *rapid.T, c net.Conn, n int) []byte {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	b := make([]byte, n)
	if got, err := io.ReadFull(c, b); err != nil {
		rt.Fatalf("read %d of %d bytes: %v", got, n, err)
	}
	return b
}

// What roomFor lets through as quiet, a socket takes whole: whatever the sends' sizes, on TCP
// or a Unix socket, with small buffers or the defaults, with loud sends (which take what they
// can) in between and a peer that reads now and then or never, a send roomFor passed is never
// short (MSG_DONTWAIT, as a quiet send on the ring).
func TestRoomForMeansTheSocketTakesItWhole(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var fd, peer int
		if rapid.Bool().Draw(rt, "unix") {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				rt.Fatal(err)
			}
			fd, peer = fds[0], fds[1]
		} else {
			a, b := tcpPair(t)
			fd, peer = detached(t, a, b)
		}
		defer unix.Close(fd)
		defer unix.Close(peer)
		if rapid.Bool().Draw(rt, "small buffers") {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<10)
			_ = unix.SetsockoptInt(peer, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10)
		}
		var st stream
		buf := make([]byte, 70_000)
		for i, n := 0, rapid.IntRange(1, 200).Draw(rt, "steps"); i < n; i++ {
			switch rapid.IntRange(0, 5).Draw(rt, "step") {
			case 0: // the peer reads some
				_, _, _ = unix.Recvfrom(peer, buf[:rapid.IntRange(1, 70_000).Draw(rt, "read")], unix.MSG_DONTWAIT)
			case 1: // a loud send: what the socket takes
				_, _ = unix.SendmsgN(fd, buf[:rapid.IntRange(1, 70_000).Draw(rt, "loud")], nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
				st.sentLoud()
			default:
				size := rapid.IntRange(1, quietMax).Draw(rt, "quiet")
				if !st.roomFor(fd, size) {
					continue
				}
				if got, err := unix.SendmsgN(fd, buf[:size], nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL); got != size {
					rt.Fatalf("step %d: roomFor passed %d bytes; the socket took %d (%v)", i, size, got, err)
				}
			}
		}
	})
}

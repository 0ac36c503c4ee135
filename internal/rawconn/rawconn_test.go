package rawconn

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// pair is a connected TCP pair over loopback: a wrapped by Wrap, b plain.
func pair(t testing.TB) (a *Conn, b net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := Listener(l, 0).Accept()
		accepted <- c
	}()
	b, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := <-accepted
	a, ok := c.(*Conn)
	if !ok {
		t.Fatalf("Listener accepted a %T, want *rawconn.Conn", c)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestBytesArriveAsWritten writes and reads random chunks both ways and compares what arrived.
func TestBytesArriveAsWritten(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		a, b := pair(t)
		chunks := rapid.SliceOfN(rapid.IntRange(1, 256<<10), 1, 4).Draw(rt, "chunks")
		readSize := rapid.IntRange(256, 64<<10).Draw(rt, "readSize")
		var sent bytes.Buffer
		for i, n := range chunks {
			sent.Write(bytes.Repeat([]byte{byte(i + 1)}, n))
		}
		for _, dir := range []struct {
			name string
			w    io.Writer
			r    io.Reader
		}{{"raw to plain", a, b}, {"plain to raw", b, a}} {
			done := make(chan error, 1)
			go func() {
				var err error
				for i, n := range chunks {
					if _, err = dir.w.Write(bytes.Repeat([]byte{byte(i + 1)}, n)); err != nil {
						break
					}
				}
				done <- err
			}()
			got := make([]byte, 0, sent.Len())
			buf := make([]byte, readSize)
			for len(got) < sent.Len() {
				n, err := dir.r.Read(buf)
				if err != nil {
					rt.Fatalf("%s: read after %d of %d bytes: %v", dir.name, len(got), sent.Len(), err)
				}
				got = append(got, buf[:n]...)
			}
			if err := <-done; err != nil {
				rt.Fatalf("%s: write: %v", dir.name, err)
			}
			if !bytes.Equal(got, sent.Bytes()) {
				rt.Fatalf("%s: the bytes read differ from those written", dir.name)
			}
		}
	})
}

// TestAWriteLargerThanTheBuffersWaitsForRoom writes far more than the socket buffers hold to
// a peer that reads slowly: the write waits in the poller and goes on where it stopped.
func TestAWriteLargerThanTheBuffersWaitsForRoom(t *testing.T) {
	a, b := pair(t)
	sent := make([]byte, 32<<20)
	for i := range sent {
		sent[i] = byte(i * 7 / 3)
	}
	done := make(chan error, 1)
	go func() {
		n, err := a.Write(sent)
		if err == nil && n != len(sent) {
			err = io.ErrShortWrite
		}
		done <- err
	}()
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second)) // a write that stops short fails, not hangs
	got := make([]byte, 0, len(sent))
	buf := make([]byte, 64<<10)
	for len(got) < len(sent) {
		n, err := b.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-done; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !bytes.Equal(got, sent) {
		t.Fatal("the bytes read differ from those written")
	}
}

func TestReadEndsAtThePeersClose(t *testing.T) {
	a, b := pair(t)
	if _, err := b.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	_ = a.SetReadDeadline(time.Now().Add(10 * time.Second)) // a read that never ends fails, not hangs
	got, err := io.ReadAll(a)
	if err != nil || string(got) != "last" {
		t.Fatalf("ReadAll = %q, %v; want \"last\", nil (io.EOF at the close)", got, err)
	}
	if n, err := a.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the close = %d, %v; want 0, io.EOF", n, err)
	}
}

func TestReadKeepsItsDeadline(t *testing.T) {
	a, _ := pair(t)
	_ = a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := a.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline = %v; want a timeout (os.ErrDeadlineExceeded)", err)
	}
}

func TestWriteKeepsItsDeadline(t *testing.T) {
	a, _ := pair(t) // the peer never reads: the buffers fill
	_ = a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := a.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n <= 0 || n >= 64<<20 {
		t.Fatalf("Write into a full socket = %d, %v; want part written and os.ErrDeadlineExceeded", n, err)
	}
}

func TestCloseEndsAWaitingRead(t *testing.T) {
	a, _ := pair(t)
	errs := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 1))
		errs <- err
	}()
	time.Sleep(20 * time.Millisecond) // the read waits in the poller
	a.Close()
	if err := <-errs; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read ended by Close = %v; want net.ErrClosed", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v; want net.ErrClosed", err)
	}
}

func TestResetIsASystemCallError(t *testing.T) {
	a, b := pair(t)
	_ = b.(*net.TCPConn).SetLinger(0)
	b.Close() // a reset
	time.Sleep(20 * time.Millisecond)
	_, err := a.Read(make([]byte, 1))
	var oe *net.OpError
	if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read of a reset connection = %v; want a read *net.OpError of ECONNRESET", err)
	}
}

func TestWrapLeavesOtherConnectionsAlone(t *testing.T) {
	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if Wrap(p) != p {
		t.Fatal("Wrap changed a connection that is not a *net.TCPConn")
	}
}

func TestDialerWraps(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var d net.Dialer
	c, err := Dialer(d.DialContext, 0)(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*Conn); !ok {
		t.Fatalf("Dialer made a %T, want *rawconn.Conn", c)
	}
	if _, err := Dialer(d.DialContext, 0)(context.Background(), "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("Dialer hid the dial's error")
	}
}

// TestReadsAndWritesAllocateNothing: a read or write is a system call, not an allocation
// (a closure per call would be one; the plain side allocates nothing either).
func TestReadsAndWritesAllocateNothing(t *testing.T) {
	a, b := pair(t)
	msg, buf := []byte("SELECT 1"), make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := a.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(b, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(a, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per write and read each way, want 0", allocs)
	}
}

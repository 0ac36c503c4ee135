package rawconn

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// shrinkReceive gives c a receive buffer of the kernel's least, so that a writer to it finds
// the window shut after a few hundred kilobytes.
func shrinkReceive(t *testing.T, c net.Conn) {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1) })
}

// TestAWriteToAPeerThatStoppedReadingEnds: with a write stall bound, a write to a peer that
// reads nothing fails with ErrWriteStalled (a timeout) instead of waiting for ever, and the
// owner's own write deadline, set later, comes back after it.
func TestAWriteToAPeerThatStoppedReadingEnds(t *testing.T) {
	a, b := pair(t)
	shrinkReceive(t, b)
	a.SetWriteStall(200 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := a.Write(make([]byte, 64<<20))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrWriteStalled) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a peer that reads nothing: %v, want ErrWriteStalled", err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%v is no net.Error timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a write to a peer that reads nothing still waits after a minute (bound 200ms)")
	}
}

// TestAnOwnersEarlierDeadlineIsKept: the bound never postpones the owner's write deadline, and
// a write cut by the owner's deadline is no stall.
func TestAnOwnersEarlierDeadlineIsKept(t *testing.T) {
	a, b := pair(t)
	shrinkReceive(t, b)
	a.SetWriteStall(time.Hour)
	_ = a.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := a.Write(make([]byte, 64<<20))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ErrWriteStalled) {
			t.Fatalf("write past the owner's deadline: %v, want the deadline's own error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the owner's deadline was postponed by a bound of an hour")
	}
}

// TestASlowSteadyReaderIsNotCut: a peer reading a little at a time, too little within a bound
// to free the third of the (large) send buffer that wakes a writer, receives a write larger
// than the buffers whole: its acknowledgements count as progress.
func TestASlowSteadyReaderIsNotCut(t *testing.T) {
	a, b := pair(t)
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<20) })
	a.SetWriteStall(300 * time.Millisecond)
	const total = 12 << 20
	done := make(chan error, 1)
	go func() {
		_, err := a.Write(make([]byte, total))
		if err != nil {
			_ = a.Close() // the reader sees the end at once
		}
		done <- err
	}()
	got, buf := 0, make([]byte, 64<<10)
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Minute))
	for got < total {
		time.Sleep(20 * time.Millisecond)
		n, err := io.ReadFull(b, buf[:min(len(buf), total-got)])
		got += n
		if err != nil {
			t.Fatalf("read after %d bytes: %v (the write: %v)", got, err, <-done)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("a write to a steady reader: %v", err)
	}
	// A later write that never waits is not cut by a deadline left behind.
	time.Sleep(400 * time.Millisecond)
	go func() { _, _ = io.Copy(io.Discard, b) }()
	if _, err := a.Write([]byte("x")); err != nil {
		t.Fatalf("a small write after a long one: %v", err)
	}
}

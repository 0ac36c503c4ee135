package relayloop

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/queryflux/queryflux/internal/rawconn"
)

// Conn is a TCP connection whose socket can be lent to a loop and come back. While the socket
// is Go's (a *net.TCPConn inside), Conn is that connection. Lend takes it out of Go's poller
// (Detach): a socket watched by both the runtime's poller and a loop would wake the runtime
// for every message the loop relays. The next Read, Write or SyscallConn brings it back,
// with the deadlines set meanwhile. Between Lend and that use the loop owns the socket: its
// owner must have taken it off the loop first (a loop may still keep it idle, Pair.KeepB:
// Conn releases it before it reads, writes or closes it).
type Conn struct {
	mu       sync.Mutex
	tc       *net.TCPConn  // nil while lent
	raw      *rawconn.Conn // tc, read and written raw (see rawconn)
	fd       int           // the socket while lent
	closed   bool
	local    net.Addr
	remote   net.Addr
	rd, wd   time.Time // deadlines set while lent
	rdd, wdd bool
	stall    time.Duration // the write stall bound (SetWriteStall)
	stalled  atomic.Bool   // a write failed on it (WriteStalled)
}

// NewConn wraps tc.
func NewConn(tc *net.TCPConn) *Conn {
	return &Conn{tc: tc, raw: rawconn.New(tc), fd: -1, local: tc.LocalAddr(), remote: tc.RemoteAddr()}
}

// Lend takes the socket out of Go's poller and returns its file descriptor, which stays
// Conn's (the loop must not close it). It fails on a closed connection.
func (c *Conn) Lend() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return -1, net.ErrClosed
	}
	if c.tc == nil {
		return c.fd, nil
	}
	fd, err := Detach(c.tc)
	if err != nil {
		return -1, err
	}
	c.tc, c.raw, c.fd = nil, nil, fd
	c.rdd, c.wdd = false, false
	return fd, nil
}

// Lent reports whether the socket is lent (out of Go's poller).
func (c *Conn) Lent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tc == nil && !c.closed
}

// FD is the lent socket's file descriptor, -1 when it is not lent.
func (c *Conn) FD() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil || c.closed {
		return -1
	}
	return c.fd
}

// get returns the Go connection, bringing a lent socket back.
func (c *Conn) get() (*rawconn.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, net.ErrClosed
	}
	if c.tc != nil {
		return c.raw, nil
	}
	Release(c.fd)
	f := os.NewFile(uintptr(c.fd), "relayloop")
	nc, err := net.FileConn(f) // a duplicate, in Go's poller
	_ = f.Close()
	if err != nil {
		c.closed = true
		return nil, err
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		_ = nc.Close()
		c.closed = true
		return nil, errors.New("relayloop: a lent socket came back as no TCP connection")
	}
	c.tc, c.raw, c.fd = tc, rawconn.New(tc), -1
	c.raw.SetWriteStall(c.stall)
	if c.rdd {
		_ = tc.SetReadDeadline(c.rd)
	}
	if c.wdd {
		_ = c.raw.SetWriteDeadline(c.wd)
	}
	return c.raw, nil
}

// Read and Write on a lent socket try a non-blocking system call first. Bringing the socket
// back into Go's poller costs two duplicates of it, an epoll registration, address lookups and
// their undoing at the next Lend: a statement between two loop turns would pay that every
// time, though its answer usually fits the socket's buffer and its reply comes within a
// moment. A read waits up to lentWait for bytes (in a blocking system call, so only a
// statement's first moments hold a thread); whatever waits longer, or fails (to be reported
// as Go reports it), takes the socket back.
func (c *Conn) Read(b []byte) (int, error) {
	for waited := false; ; waited = true {
		n, errno, fd := c.lentCall(b, read)
		if fd >= 0 && errno == 0 {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		if fd < 0 || errno != syscall.EAGAIN || waited || !waitReadable(fd, c.readWait()) {
			break
		}
	}
	tc, err := c.get()
	if err != nil {
		return 0, err
	}
	return tc.Read(b)
}

func (c *Conn) Write(b []byte) (int, error) {
	n, errno, fd := c.lentCall(b, write)
	if fd >= 0 && errno == 0 && n == len(b) {
		return n, nil
	}
	if fd < 0 || errno != 0 {
		n = 0
	}
	tc, err := c.get()
	if err != nil {
		return n, err
	}
	m, err := tc.Write(b[n:])
	if err != nil && errors.Is(err, rawconn.ErrWriteStalled) {
		c.stalled.Store(true)
	}
	return n + m, err
}

// WriteStalled reports whether a write failed on the write stall bound (SetWriteStall).
func (c *Conn) WriteStalled() bool { return c.stalled.Load() }

// lentWait bounds how long a read of a lent socket waits outside Go's poller.
const lentWait = 2 * time.Millisecond

// lentCall makes one non-blocking call of op on the lent socket and returns its descriptor;
// fd is -1 when no call was made: the socket is not lent, b is empty, or a deadline set
// meanwhile has passed (Go's connection reports that once it is back).
func (c *Conn) lentCall(b []byte, op func(int, []byte) (int, syscall.Errno)) (n int, errno syscall.Errno, fd int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil || c.closed || len(b) == 0 || c.deadlinePassed() {
		return 0, 0, -1
	}
	Release(c.fd)
	n, errno = op(c.fd, b)
	return n, errno, c.fd
}

// readWait is how long a read of the lent socket may wait for bytes: lentWait, or less
// before a read deadline.
func (c *Conn) readWait() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rdd && !c.rd.IsZero() {
		return min(lentWait, time.Until(c.rd))
	}
	return lentWait
}

// deadlinePassed reports whether a deadline set while lent has passed.
func (c *Conn) deadlinePassed() bool {
	if !c.rdd && !c.wdd {
		return false
	}
	now := time.Now()
	return (c.rdd && !c.rd.IsZero() && !now.Before(c.rd)) || (c.wdd && !c.wd.IsZero() && !now.Before(c.wd))
}

// Close closes the connection, lent or not.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	c.closed = true
	if c.tc != nil {
		return c.tc.Close()
	}
	Release(c.fd)
	return closeFD(c.fd)
}

// Shutdown ends the connection both ways without closing it, lent or not: whoever reads it (a
// loop included) sees its end, and the socket's number stays its own until Close. For a
// canceller that must stop a connection another thread relays.
func (c *Conn) Shutdown() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return net.ErrClosed
	case c.tc != nil:
		return errors.Join(c.tc.CloseRead(), c.tc.CloseWrite())
	}
	return shutdownFD(c.fd)
}

func (c *Conn) LocalAddr() net.Addr  { return c.local }
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline applies to the Go connection; while lent it is kept for when it comes back
// (nothing reads a lent socket but its loop).
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil {
		return c.tc.SetReadDeadline(t)
	}
	c.rd, c.rdd = t, true
	return nil
}

func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil {
		return c.raw.SetWriteDeadline(t) // (which the write stall bound keeps)
	}
	c.wd, c.wdd = t, true
	return nil
}

// SetWriteStall bounds how long a write of the Go connection may wait with nothing taken by
// the socket (rawconn's SetWriteStall; the error is rawconn.ErrWriteStalled). A loop writing
// the lent socket bounds it by its pair's WriteTimeout instead.
func (c *Conn) SetWriteStall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stall = d
	if c.tc != nil {
		c.raw.SetWriteStall(d)
	}
}

// SyscallConn brings a lent socket back (its users poll it through Go).
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	tc, err := c.get()
	if err != nil {
		return nil, err
	}
	return tc.SyscallConn()
}

// Pending reports whether a lent socket has bytes to read or was closed by its peer (one
// non-blocking peek); false for a socket that is not lent.
func (c *Conn) Pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tc != nil || c.closed {
		return false
	}
	return peek(c.fd)
}

// Listener accepts TCP connections as Conns, whose sockets may then be lent to a loop.
func Listener(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok && err == nil {
		return NewConn(tc), nil
	}
	return nc, err
}

// ConnOf is nc's socket as a Conn, found under wrappers that expose it (NetConn, as
// netlimit's does); nil when there is none or TLS runs on it.
func ConnOf(nc net.Conn) *Conn {
	for range 4 {
		if c, ok := nc.(*Conn); ok {
			return c
		}
		w, ok := nc.(interface{ NetConn() net.Conn })
		if _, isTLS := nc.(*tls.Conn); !ok || isTLS {
			return nil
		}
		nc = w.NetConn()
	}
	return nil
}

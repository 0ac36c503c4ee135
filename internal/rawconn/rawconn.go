// Package rawconn reads and writes a TCP connection with raw system calls on its
// non-blocking socket, waiting in the runtime's network poller only when the socket has
// nothing to give or take.
//
// Why: every read or write of a net.TCPConn enters the system call through the runtime's
// syscall entry, which wakes the runtime's monitor thread (a futex wake) whenever that thread
// went to sleep because the process was idle. A server that answers one request at a time
// goes idle between requests, so each request paid that wake, about 8 % of the Trino port's
// CPU. A non-blocking read or write never blocks the thread, so it needs no entry.
//
// It may touch only the sockets it is given; deadlines, Close and the poller's wake-ups stay
// the net.TCPConn's.
//
// determinism: outside the simulator (system calls on real sockets, which the simulator never opens)
package rawconn

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Conn is a *net.TCPConn whose Read and Write are raw system calls.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	// A read's or write's arguments and results, for the functions RawConn calls (made once:
	// a closure per call would be an allocation per read and write). The mutexes keep two
	// goroutines' calls apart, as net.Conn allows them.
	rmu     sync.Mutex
	rbuf    []byte
	rn      int
	rerrno  syscall.Errno
	readFn  func(fd uintptr) bool
	wmu     sync.Mutex
	wbuf    []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
	st      stall // the write stall bound (stall.go)

	// Spinning (spin.go): spin bounds how long a read awaiting an answer to this
	// connection's last write polls the socket before it waits in the poller (0: never).
	spin      time.Duration
	wrote     atomic.Bool // a write since the last read returned: the next read awaits an answer
	waiting   bool        // this read awaits an answer and found the socket empty, at waitStart
	counted   bool        // it counts in spinWaiters
	waitStart time.Time
	lastWait  time.Duration // how long the last read that waited waited
}

// New wraps tc, which must be open.
func New(tc *net.TCPConn) *Conn {
	rc, err := tc.SyscallConn()
	if err != nil {
		panic("rawconn: New of a closed connection: " + err.Error())
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.readFn, c.writeFn = c.rawRead, c.rawWrite
	return c
}

// Wrap returns c with raw reads and writes when it is a *net.TCPConn, else c itself.
func Wrap(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		return New(tc)
	}
	return c
}

// Read reads what the socket has, waiting in the poller (under the read deadline) when it
// has nothing.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf, c.rn, c.rerrno = p, 0, 0
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerrno
	c.rbuf = nil
	c.readEnded()
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// rawRead is one read of the socket; false to wait until it is readable.
func (c *Conn) rawRead(fd uintptr) bool {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
	if e == syscall.EAGAIN && c.spin > 0 && !c.waiting && c.wrote.Load() {
		r, e = c.spinRead(fd)
	}
	if e == syscall.EAGAIN {
		return false
	}
	c.rn, c.rerrno = int(r), e
	return e != syscall.EINTR
}

// Write writes all of p, waiting in the poller (under the write deadline) while the socket's
// buffer is full.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf, c.wn, c.werrno = p, 0, 0
	err := c.rc.Write(c.writeFn)
	for err != nil && c.st.bound > 0 && c.stallProgressed(err) {
		err = c.rc.Write(c.writeFn) // the peer took more: the write goes on where it was
	}
	written, errno := c.wn, c.werrno
	c.wbuf = nil
	if c.st.bound > 0 {
		err = c.disarmStall(err)
	}
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", errno)
	}
	return written, nil
}

// rawWrite writes what is left of the write; false to wait until the socket takes more.
func (c *Conn) rawWrite(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.wbuf[c.wn])), uintptr(len(c.wbuf)-c.wn))
		switch e {
		case 0:
			c.wn += int(r)
			if c.spin > 0 {
				c.wrote.Store(true)
			}
		case syscall.EINTR:
		case syscall.EAGAIN:
			if c.st.bound > 0 {
				c.armStall(fd, c.wn)
			}
			return false
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

func (c *Conn) opError(op string, err error) error {
	if err == ErrWriteStalled {
		return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if errno, ok := err.(syscall.Errno); ok {
		err = &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
	}
	return err
}

// Listener wraps l: the TCP connections it accepts read and write raw, and spin (SetSpin)
// for up to spin awaiting a client's next request.
func Listener(l net.Listener, spin time.Duration) net.Listener { return listener{l, spin} }

type listener struct {
	net.Listener
	spin time.Duration
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrapSpinning(c, l.spin), nil
}

// Dialer wraps dial: the TCP connections it makes read and write raw, and spin (SetSpin) for
// up to spin awaiting an answer.
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), spin time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrapSpinning(c, spin), nil
	}
}

func wrapSpinning(c net.Conn, spin time.Duration) net.Conn {
	c = Wrap(c)
	if rc, ok := c.(*Conn); ok {
		rc.SetSpin(spin)
	}
	return c
}

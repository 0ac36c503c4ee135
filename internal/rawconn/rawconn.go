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
package rawconn

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Conn is a *net.TCPConn whose Read and Write are raw system calls.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// New wraps tc, which must be open.
func New(tc *net.TCPConn) *Conn {
	rc, err := tc.SyscallConn()
	if err != nil {
		panic("rawconn: New of a closed connection: " + err.Error())
	}
	return &Conn{TCPConn: tc, rc: rc}
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
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == syscall.EAGAIN {
			return false
		}
		n, errno = int(r), e
		return e != syscall.EINTR
	})
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

// Write writes all of p, waiting in the poller (under the write deadline) while the socket's
// buffer is full.
func (c *Conn) Write(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[written])), uintptr(len(p)-written))
			switch e {
			case 0:
				written += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", errno)
	}
	return written, nil
}

func (c *Conn) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
	}
	return err
}

// Listener wraps l: the TCP connections it accepts read and write raw.
func Listener(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}

// Dialer wraps dial: the TCP connections it makes read and write raw.
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Wrap(c), nil
	}
}

//go:build unix

package pgengine

import (
	"syscall"
)

// quiet reports whether the idle connection has nothing to read: a server that shut the
// connection (or said why, FATAL) while it was idle has. One non-blocking peek, no round trip.
func (c *rawConn) quiet() bool {
	if c.sock != nil && c.sock.Lent() {
		return !c.sock.Pending() // peeked where a loop left it, without taking it back
	}
	sc, ok := unwrapped(c.nc).(syscall.Conn) // TLS: any pending bytes count, encrypted or not
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		quiet = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && quiet
}

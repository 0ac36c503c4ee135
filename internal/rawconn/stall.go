package rawconn

import (
	"errors"
	"os"
	"sync"
	"time"
)

// ErrWriteStalled is a write that waited longer than its connection's write stall bound
// (SetWriteStall) with nothing taken by the socket: a peer that stopped reading. It is a
// timeout (os.ErrDeadlineExceeded), as a write deadline's is.
var ErrWriteStalled = &stallError{}

type stallError struct{}

func (*stallError) Error() string {
	return "the peer took nothing of a write within the write stall bound (it stopped reading)"
}
func (*stallError) Timeout() bool   { return true }
func (*stallError) Temporary() bool { return false }
func (*stallError) Is(target error) bool {
	return target == os.ErrDeadlineExceeded
}

// stall is a connection's write stall bound and the write deadline its owner set, which the
// bound's own deadlines never postpone.
type stall struct {
	bound time.Duration // 0: none

	mu  sync.Mutex
	own time.Time // the owner's write deadline (zero: none)
	// While a write waits: armed, the deadline armed, whether it is the bound's (not the
	// owner's, which came first), and the write's progress (bytes written) when it was armed.
	armed   bool
	at      time.Time
	bounds  bool
	atBytes int
	acked   uint64 // the socket's bytes acknowledged by the peer when armed (tcpi_bytes_acked)
	stalled bool   // a write failed with ErrWriteStalled
}

// SetWriteStall bounds how long a write may wait with nothing taken by the socket (the peer's
// window shut): each time the socket takes some of it, or the peer acknowledges more of what
// the socket holds (a reader too slow to free the third of the send buffer that wakes a
// writer), the write gets d again, so a peer that reads slowly but steadily is never cut,
// however long the write. A write that waits longer
// fails with ErrWriteStalled (the connection is then unusable for writes, as after any write
// deadline). d <= 0 removes the bound. Writes that never wait cost nothing more. Set it before
// the connection is written.
func (c *Conn) SetWriteStall(d time.Duration) { c.st.bound = max(d, 0) }

// WriteStalled reports whether a write failed with ErrWriteStalled.
func (c *Conn) WriteStalled() bool {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return c.st.stalled
}

// WriteStall is the bound SetWriteStall set.
func (c *Conn) WriteStall() time.Duration { return c.st.bound }

// SetWriteDeadline is the net.Conn's, kept so that a write stall bound never postpones it.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	c.st.own = t
	c.st.armed = false // the owner's deadline replaces what a waiting write armed
	return c.TCPConn.SetWriteDeadline(t)
}

// SetDeadline is the net.Conn's (see SetWriteDeadline).
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.TCPConn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// armStall runs when a write finds socket fd full (written: the write's bytes so far): the
// first time, or after the socket took more since, the bound's deadline is (re)armed.
func (c *Conn) armStall(fd uintptr, written int) {
	s := &c.st
	if s.bound <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed && s.atBytes == written {
		return // woken without progress: the clock runs on
	}
	s.armed, s.atBytes, s.acked = true, written, bytesAcked(fd)
	c.rearmLocked()
}

// rearmLocked gives the waiting write the bound again from now (never past the owner's).
func (c *Conn) rearmLocked() {
	s := &c.st
	s.at, s.bounds = time.Now().Add(s.bound), true
	if !s.own.IsZero() && s.own.Before(s.at) {
		s.at, s.bounds = s.own, false
	}
	_ = c.TCPConn.SetWriteDeadline(s.at)
}

// stallProgressed reports, for a write that failed with err, whether it failed on the bound's
// deadline though the peer acknowledged more meanwhile: then the bound is rearmed and the
// write goes on.
func (c *Conn) stallProgressed(err error) bool {
	s := &c.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed || !s.bounds || !errors.Is(err, os.ErrDeadlineExceeded) || time.Now().Before(s.at) {
		return false
	}
	var acked uint64
	if c.rc.Control(func(fd uintptr) { acked = bytesAcked(fd) }) != nil || acked <= s.acked {
		return false
	}
	s.acked = acked
	c.rearmLocked()
	return true
}

// disarmStall ends a write: the owner's deadline comes back, and a write that failed on the
// bound's deadline reports ErrWriteStalled.
func (c *Conn) disarmStall(err error) error {
	s := &c.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return err
	}
	s.armed = false
	if err != nil && s.bounds && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(s.at) {
		err, s.stalled = ErrWriteStalled, true
	}
	_ = c.TCPConn.SetWriteDeadline(s.own)
	return err
}

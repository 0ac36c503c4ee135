//go:build linux

package relayloop

import (
	"time"

	"golang.org/x/sys/unix"
)

// timeDirection keeps the clock of what direction d's flush left waiting: A's half-sent
// message (AToB) or the writes to A (BToA).
func (p *pair) timeDirection(l *Loop, d Direction) {
	if d == AToB {
		p.timeMessage(l)
	} else if p.p.WriteTimeout > 0 {
		p.timeWrite(l)
	}
}

// timeWrite starts the write clock when bytes for A wait for its socket, starts it again when
// the socket took some since, and stops it when nothing waits. A ring's quiet send waits for
// nothing (MSG_DONTWAIT: it completes at its submission, and what A's socket did not take goes
// in a loud send, which starts the clock): its flight starts none, or every answer relayed
// would cost a clock read, a TCP_INFO read (a system call and an allocation) and the stalled
// set's insert and delete, and keep the loop's waits timed.
func (p *pair) timeWrite(l *Loop) {
	if p.done {
		return
	}
	st := &p.st[BToA]
	waits := st.blocked && (st.inflight == nil || !st.quiet)
	switch {
	case waits && (p.stalled.IsZero() || p.stalledOut != st.out):
		p.stalled, p.stalledOut, p.stalledAcked = time.Now(), st.out, bytesAcked(p.p.A)
		l.stalled[p] = struct{}{}
		l.writeClocks.Add(1)
	case !waits && !p.stalled.IsZero():
		p.stalled = time.Time{}
		delete(l.stalled, p)
	}
}

// expireStalled stops the pairs whose writes to A made no progress for their WriteTimeout.
// What A's peer acknowledged since counts as progress: a reader too slow to free the third of
// the socket's send buffer that makes it writable still reads.
func (l *Loop) expireStalled(now time.Time) {
	for p := range l.stalled {
		if now.Sub(p.stalled) < p.p.WriteTimeout || p.done {
			continue
		}
		if acked := bytesAcked(p.p.A); acked > p.stalledAcked {
			p.stalled, p.stalledAcked = now, acked
			continue
		}
		p.stop(l, Result{Err: ErrWriteTimeout, Side: BToA})
	}
}

// bytesAcked is what the peer of TCP socket fd acknowledged so far (0 where unknown).
func bytesAcked(fd int) uint64 {
	if fd < 0 {
		return 0
	}
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0
	}
	return info.Bytes_acked
}

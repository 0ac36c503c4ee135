//go:build linux

package main

import (
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/uring"
)

// uRelay relays every pair on one io_uring, on one locked OS thread: receives are multishot
// into a provided-buffer ring (no submission per receive), the buffer received is sent as it is
// to the other socket and goes back to the ring once sent, and each turn of the loop is one
// io_uring_enter (submit the sends queued, wait for a completion).
type uRelay struct {
	ring *uring.Ring
	bufs *uring.BufRing
	evfd int
	evb  []byte // the eventfd's 8 bytes, read by the kernel (mmapped)
	raw  bool
	peek bool // look without blocking before each blocking wait
	// minWait > 0: each wait is for batch completions for up to minWait us, then for one.
	minWait uint32
	batch   int

	mu       sync.Mutex
	incoming [][2]int

	conns []*uconn
	free  []int
	nobuf int
}

type uconn struct {
	fd      [2]int
	q       [2][]chunk // q[s]: received from fd[s], to send to fd[1-s]
	sending [2]bool
	ops     int
	closing bool
	scan    pgScan // the server's messages (side 1)
}

type chunk struct {
	bid    uint16
	off, n int
}

const (
	opRecv = 1
	opSend = 2
	opWake = 3
)

func userData(idx, op, side int) uint64 { return uint64(idx)<<16 | uint64(op)<<8 | uint64(side) }

// runURing serves l's connections on a uring relay; it does not return.
func runURing(l net.Listener, upstream string, raw, peek bool, minWait uint32, batch int) {
	u := &uRelay{raw: raw, peek: peek, minWait: minWait, batch: batch}
	serveDetached(l, upstream, u.run, func(a, b int) {
		u.mu.Lock()
		u.incoming = append(u.incoming, [2]int{a, b})
		u.mu.Unlock()
		one := [8]byte{1}
		_, _ = unix.Write(u.evfd, one[:])
	})
}

func (u *uRelay) run(ready chan<- error) {
	runtime.LockOSThread()
	flags := uint32(uring.SetupSingleIssuer | uring.SetupDeferTaskrun | uring.SetupSubmitAll)
	switch os.Getenv("URING_SETUP") { // variants for the measurements
	case "coop":
		flags = uring.SetupSingleIssuer | uring.SetupCoopTaskrun | uring.SetupTaskrunFlag | uring.SetupSubmitAll
	case "plain":
		flags = uring.SetupSubmitAll
	}
	ring, err := uring.New(1024, flags)
	if err != nil {
		ready <- err
		return
	}
	if os.Getenv("URING_NOREG") == "" {
		if err := ring.RegisterRingFD(); err != nil {
			ready <- err
			return
		}
	}
	u.ring = ring
	if u.bufs, err = ring.RegisterBufRing(0, 1024, 16<<10); err != nil {
		ready <- err
		return
	}
	if u.evfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		ready <- err
		return
	}
	if u.evb, err = unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		ready <- err
		return
	}
	u.armWake()
	ready <- nil
	peek := u.peek
	for {
		u.bufs.Publish()
		if peek { // as the epoll loop does: look without blocking first
			if err := ring.GetEvents(); err != nil {
				panic(err)
			}
			if ring.Ready() > 0 {
				ring.Completions(u.complete)
				continue
			}
		}
		var err error
		if u.minWait > 0 {
			err = ring.SubmitAndWaitMin(u.batch, u.minWait)
		} else {
			err = ring.SubmitAndWait(1)
		}
		if err != nil {
			panic(err)
		}
		ring.Completions(u.complete)
	}
}

func (u *uRelay) sqe() *uring.SQE {
	for {
		if s := u.ring.SQE(); s != nil {
			return s
		}
		if err := u.ring.Submit(); err != nil {
			panic(err)
		}
	}
}

func (u *uRelay) armWake() {
	s := u.sqe()
	s.Opcode, s.FD, s.Len = uring.OpRead, int32(u.evfd), 8
	s.Addr = uint64(uintptrOf(u.evb))
	s.UserData = userData(0, opWake, 0)
}

func (u *uRelay) armRecv(idx, side int) {
	c := u.conns[idx]
	s := u.sqe()
	s.Opcode, s.FD = uring.OpRecv, int32(c.fd[side])
	s.Ioprio = uring.RecvMultishot
	s.Flags = uring.SqeBufferSelect
	s.BufIndex = u.bufs.Group
	s.UserData = userData(idx, opRecv, side)
	c.ops++
}

func (u *uRelay) send(idx, side int) {
	c := u.conns[idx]
	ch := c.q[side][0]
	s := u.sqe()
	s.Opcode, s.FD = uring.OpSend, int32(c.fd[1-side])
	s.Addr, s.Len = u.bufs.Addr(ch.bid, ch.off), uint32(ch.n-ch.off)
	s.OpFlags = unix.MSG_NOSIGNAL
	s.UserData = userData(idx, opSend, side)
	c.sending[side] = true
	c.ops++
}

func (u *uRelay) complete(e *uring.CQE) {
	for i := 0; i < len(touchBuf); i += 64 {
		touchBuf[i]++
	}
	idx, op, side := int(e.UserData>>16), int(e.UserData>>8&0xff), int(e.UserData&0xff)
	if op == opWake {
		u.accept()
		u.armWake()
		return
	}
	c := u.conns[idx]
	switch op {
	case opRecv:
		if e.Flags&uring.CQEFMore == 0 {
			c.ops--
		}
		if e.Res > 0 && e.Flags&uring.CQEFBuffer != 0 {
			bid := uint16(e.Flags >> 16)
			if c.closing {
				u.bufs.Put(bid)
				break
			}
			if side == 1 && !u.raw {
				c.scan.feed(u.bufs.Buf(bid, int(e.Res)))
			}
			c.q[side] = append(c.q[side], chunk{bid: bid, n: int(e.Res)})
			if !c.sending[side] {
				u.send(idx, side)
			}
			if e.Flags&uring.CQEFMore == 0 {
				u.armRecv(idx, side)
			}
			break
		}
		if e.Res == -int32(unix.ENOBUFS) && !c.closing {
			u.nobuf++
			u.armRecv(idx, side)
			break
		}
		if e.Flags&uring.CQEFMore == 0 || e.Res <= 0 {
			u.close(idx)
		}
	case opSend:
		c.ops--
		c.sending[side] = false
		if e.Res < 0 || c.closing {
			u.close(idx)
			break
		}
		ch := &c.q[side][0]
		ch.off += int(e.Res)
		if ch.off == ch.n {
			u.bufs.Put(ch.bid)
			c.q[side] = c.q[side][1:]
		}
		if len(c.q[side]) > 0 {
			u.send(idx, side)
		}
	}
	if c.closing && c.ops == 0 {
		u.release(idx)
	}
}

func (u *uRelay) accept() {
	u.mu.Lock()
	in := u.incoming
	u.incoming = nil
	u.mu.Unlock()
	for _, fds := range in {
		c := &uconn{fd: fds}
		var idx int
		if n := len(u.free); n > 0 {
			idx = u.free[n-1]
			u.free = u.free[:n-1]
			u.conns[idx] = c
		} else {
			idx = len(u.conns)
			u.conns = append(u.conns, c)
		}
		u.armRecv(idx, 0)
		u.armRecv(idx, 1)
	}
}

// close shuts both sockets down, which ends their outstanding requests; release frees them.
func (u *uRelay) close(idx int) {
	c := u.conns[idx]
	if c.closing {
		return
	}
	c.closing = true
	_ = unix.Shutdown(c.fd[0], unix.SHUT_RDWR)
	_ = unix.Shutdown(c.fd[1], unix.SHUT_RDWR)
}

func (u *uRelay) release(idx int) {
	c := u.conns[idx]
	for s := range 2 {
		for _, ch := range c.q[s] {
			u.bufs.Put(ch.bid)
		}
		_ = unix.Close(c.fd[s])
	}
	u.conns[idx] = nil
	u.free = append(u.free, idx)
}

// pgScan frames a stream of PostgreSQL messages, keeping the last ReadyForQuery's status, as
// the event loop relay's PGWatching('Z') does.
type pgScan struct {
	hdr    [5]byte
	hn     int
	left   int
	status byte
	inZ    bool
}

func (p *pgScan) feed(b []byte) {
	for len(b) > 0 {
		if p.left > 0 {
			n := min(p.left, len(b))
			if p.inZ && n == p.left {
				p.status = b[n-1]
			}
			p.left -= n
			b = b[n:]
			continue
		}
		n := copy(p.hdr[p.hn:], b)
		p.hn += n
		b = b[n:]
		if p.hn < 5 {
			return
		}
		p.hn = 0
		p.inZ = p.hdr[0] == 'Z'
		p.left = int(uint32(p.hdr[1])<<24|uint32(p.hdr[2])<<16|uint32(p.hdr[3])<<8|uint32(p.hdr[4])) - 4
	}
}

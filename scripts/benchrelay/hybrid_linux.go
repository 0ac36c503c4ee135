//go:build linux

package main

import (
	"net"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/uring"
)

// hRelay is the hybrid: epoll says which sockets are readable, then one io_uring_enter reads
// them all (MSG_DONTWAIT receives into each socket's own mmapped buffer) and one more writes
// what was read to the other sockets: three system calls a turn, however many sockets.
type hRelay struct {
	ring *uring.Ring
	epfd int
	evfd int
	raw  bool
	mem  []byte // bufSize per socket, by slot

	mu       sync.Mutex
	incoming [][2]int

	conns  []*hconn
	free   []int
	events []unix.EpollEvent
	got    []hgot
}

type hconn struct {
	fd   [2]int
	scan pgScan
}

type hgot struct{ idx, side, n int }

const hBuf = 16 << 10
const hMaxConns = 512

func runHybrid(l net.Listener, upstream string, raw bool) {
	h := &hRelay{raw: raw, events: make([]unix.EpollEvent, 128)}
	serveDetached(l, upstream, h.run, func(a, b int) {
		h.mu.Lock()
		h.incoming = append(h.incoming, [2]int{a, b})
		h.mu.Unlock()
		one := [8]byte{1}
		_, _ = unix.Write(h.evfd, one[:])
	})
}

func (h *hRelay) run(ready chan<- error) {
	runtime.LockOSThread()
	var err error
	if h.ring, err = uring.New(512, uring.SetupSingleIssuer|uring.SetupDeferTaskrun|uring.SetupSubmitAll); err == nil {
		err = h.ring.RegisterRingFD()
	}
	if err == nil {
		h.mem, err = unix.Mmap(-1, 0, hMaxConns*2*hBuf, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	}
	if err == nil {
		h.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	}
	if err == nil {
		h.evfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	}
	if err == nil {
		err = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_ADD, h.evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1})
	}
	if err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		n, err := unix.EpollWait(h.epfd, h.events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			panic(err)
		}
		k := 0
		for _, ev := range h.events[:n] {
			if ev.Fd == -1 {
				h.accept()
				continue
			}
			idx, side := int(ev.Pad)>>1, int(ev.Pad)&1
			if h.conns[idx] == nil {
				continue
			}
			s := h.ring.SQE()
			s.Opcode, s.FD = uring.OpRecv, int32(h.conns[idx].fd[side])
			s.Addr, s.Len = h.addr(idx, side, 0), hBuf
			s.OpFlags = unix.MSG_DONTWAIT
			s.UserData = uint64(idx<<1 | side)
			k++
		}
		if k == 0 {
			continue
		}
		h.enter(k)
		h.got = h.got[:0]
		h.ring.Completions(func(e *uring.CQE) {
			idx, side := int(e.UserData>>1), int(e.UserData&1)
			switch {
			case e.Res > 0:
				h.got = append(h.got, hgot{idx, side, int(e.Res)})
			case e.Res == -int32(unix.EAGAIN):
			default:
				h.close(idx)
			}
		})
		h.sendAll()
	}
}

// enter submits and waits for k completions.
func (h *hRelay) enter(k int) {
	for h.ring.Ready() < k {
		if err := h.ring.SubmitAndWait(k - h.ring.Ready()); err != nil {
			panic(err)
		}
	}
}

// sendAll sends what the turn read, each to the other socket of its pair, all in one enter
// (more only for short sends).
func (h *hRelay) sendAll() {
	off := make(map[int]int, len(h.got))
	for len(h.got) > 0 {
		k := 0
		for i, g := range h.got {
			c := h.conns[g.idx]
			if c == nil {
				continue
			}
			if g.side == 1 && !h.raw && off[i] == 0 {
				c.scan.feed(h.mem[h.slot(g.idx, 1) : h.slot(g.idx, 1)+g.n])
			}
			s := h.ring.SQE()
			s.Opcode, s.FD = uring.OpSend, int32(c.fd[1-g.side])
			s.Addr, s.Len = h.addr(g.idx, g.side, off[i]), uint32(g.n-off[i])
			s.OpFlags = unix.MSG_NOSIGNAL
			s.UserData = uint64(i)
			k++
		}
		h.enter(k)
		var short []hgot
		var soff []int
		h.ring.Completions(func(e *uring.CQE) {
			i := int(e.UserData)
			g := h.got[i]
			if e.Res < 0 {
				h.close(g.idx)
				return
			}
			if o := off[i] + int(e.Res); o < g.n {
				short = append(short, g)
				soff = append(soff, o)
			}
		})
		h.got = short
		clear(off)
		for i, o := range soff {
			off[i] = o
		}
	}
}

func (h *hRelay) slot(idx, side int) int { return (idx*2 + side) * hBuf }

func (h *hRelay) addr(idx, side, off int) uint64 {
	return uint64(uintptrOf(h.mem[h.slot(idx, side)+off:]))
}

func (h *hRelay) accept() {
	var b [8]byte
	_, _ = unix.Read(h.evfd, b[:])
	h.mu.Lock()
	in := h.incoming
	h.incoming = nil
	h.mu.Unlock()
	for _, fds := range in {
		var idx int
		if n := len(h.free); n > 0 {
			idx = h.free[n-1]
			h.free = h.free[:n-1]
		} else {
			idx = len(h.conns)
			h.conns = append(h.conns, nil)
		}
		if idx >= hMaxConns {
			_ = unix.Close(fds[0])
			_ = unix.Close(fds[1])
			continue
		}
		h.conns[idx] = &hconn{fd: fds}
		for side, fd := range fds {
			_ = unix.SetNonblock(fd, true)
			ev := unix.EpollEvent{Events: unix.EPOLLIN}
			ev.Pad = int32(idx<<1 | side)
			_ = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
		}
	}
}

func (h *hRelay) close(idx int) {
	c := h.conns[idx]
	if c == nil {
		return
	}
	_ = unix.Close(c.fd[0])
	_ = unix.Close(c.fd[1])
	h.conns[idx] = nil
	h.free = append(h.free, idx)
}

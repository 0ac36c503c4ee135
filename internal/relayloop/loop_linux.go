//go:build linux

package relayloop

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Loop is one event loop: a goroutine locked to its OS thread, waiting in epoll
// (level-triggered) on the sockets of its pairs.
type Loop struct {
	epfd, evfd int
	bufBytes   int

	mu     sync.Mutex
	cmds   []func()
	closed bool
	exited chan struct{}

	// Only the loop's thread touches these.
	ends   map[int]*end
	events []unix.EpollEvent
}

// ErrStopped is a Result's Err when the pair was stopped from outside (Handle.Stop, Close).
var ErrStopped = errors.New("relayloop: stopped")

// BufferBytesDefault is each direction's buffer when New is given 0: the largest watched
// message, and the most bytes one read takes.
const BufferBytesDefault = 32 << 10

// New starts a loop with bufBytes per direction of each pair (0: BufferBytesDefault).
func New(bufBytes int) (*Loop, error) {
	if bufBytes <= 0 {
		bufBytes = BufferBytesDefault
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("relayloop: epoll: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("relayloop: eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(evfd)
		return nil, fmt.Errorf("relayloop: epoll: %w", err)
	}
	l := &Loop{epfd: epfd, evfd: evfd, bufBytes: bufBytes, exited: make(chan struct{}),
		ends: map[int]*end{}, events: make([]unix.EpollEvent, 128)}
	go l.run()
	return l, nil
}

// Handle is a pair running on a loop.
type Handle struct {
	l *Loop
	p *pair
}

// Add starts relaying p. Its sockets are made non-blocking. The pair's Done runs once it
// stops, also when the loop is closed first.
func (l *Loop) Add(p Pair) (*Handle, error) {
	for _, fd := range []int{p.A, p.B} {
		if err := unix.SetNonblock(fd, true); err != nil {
			return nil, fmt.Errorf("relayloop: socket %d: %w", fd, err)
		}
	}
	pr := newPair(p, l.bufBytes)
	if !l.do(func() { l.start(pr) }) {
		pr.finish(Result{Err: ErrStopped})
	}
	return &Handle{l: l, p: pr}, nil
}

// Stop ends the pair (Done gets ErrStopped) unless it has already stopped. It does not wait.
func (h *Handle) Stop() {
	h.l.do(func() { h.p.stop(h.l, Result{Err: ErrStopped}) })
}

// Close stops every pair (their Done get ErrStopped) and the loop, and waits for it.
func (l *Loop) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.exited
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.wake()
	<-l.exited
}

// do runs fn on the loop's thread; false when the loop is closed.
func (l *Loop) do(fn func()) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.cmds = append(l.cmds, fn)
	first := len(l.cmds) == 1
	l.mu.Unlock()
	if first {
		l.wake()
	}
	return true
}

func (l *Loop) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(l.evfd, one[:])
}

func (l *Loop) run() {
	runtime.LockOSThread()
	defer close(l.exited)
	for {
		n, err := l.wait()
		if err != nil && err != unix.EINTR {
			panic(fmt.Sprintf("relayloop: epoll_wait: %v", err))
		}
		for i := range n {
			ev := l.events[i]
			if int(ev.Fd) == l.evfd {
				if l.commands() {
					l.shutdown()
					return
				}
				continue
			}
			if e := l.ends[int(ev.Fd)]; e != nil {
				e.p.event(l, e.side, ev.Events)
			}
		}
	}
}

// wait polls without blocking first (no hand-off of the thread's processor when events are
// already there, the common case under load), then blocks.
func (l *Loop) wait() (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if e == 0 && r > 0 {
		return int(r), nil
	}
	return unix.EpollWait(l.epfd, l.events, -1)
}

// commands runs what other goroutines asked for; true when the loop must end.
func (l *Loop) commands() bool {
	var b [8]byte
	_, _ = unix.Read(l.evfd, b[:])
	l.mu.Lock()
	cmds, closed := l.cmds, l.closed
	l.cmds = nil
	l.mu.Unlock()
	for _, fn := range cmds {
		fn()
	}
	return closed
}

func (l *Loop) shutdown() {
	stopped := map[*pair]bool{}
	for _, e := range l.ends {
		if !stopped[e.p] {
			stopped[e.p] = true
			e.p.stop(l, Result{Err: ErrStopped})
		}
	}
	_ = unix.Close(l.epfd)
	_ = unix.Close(l.evfd)
}

func (l *Loop) start(p *pair) {
	for s := range 2 {
		fd := p.fd(Direction(s))
		l.ends[fd] = &end{p: p, side: Direction(s)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: p.interest(Direction(s)), Fd: int32(fd)}); err != nil {
			p.stop(l, Result{Err: fmt.Errorf("relayloop: epoll_ctl add %d: %w", fd, err), Side: Direction(s)})
			return
		}
	}
	p.registered = true
}

// setInterest updates what epoll reports for a socket of p.
func (l *Loop) setInterest(p *pair, side Direction) {
	ev := p.interest(side)
	if ev == p.cur[side] {
		return
	}
	p.cur[side] = ev
	fd := p.fd(side)
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)}); err != nil {
		p.stop(l, Result{Err: fmt.Errorf("relayloop: epoll_ctl mod %d: %w", fd, err), Side: side})
	}
}

func (l *Loop) forget(p *pair) {
	if !p.registered {
		for s := range 2 {
			if e := l.ends[p.fd(Direction(s))]; e != nil && e.p == p {
				delete(l.ends, p.fd(Direction(s)))
			}
		}
		return
	}
	for s := range 2 {
		fd := p.fd(Direction(s))
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
		delete(l.ends, fd)
	}
}

// Detach takes c's socket for a loop: it returns a duplicate of its file descriptor (the
// caller closes it once the pair is done) and closes c, so that the Go runtime's poller no
// longer watches the socket too.
func Detach(c syscall.Conn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("relayloop: dup: %w", derr)
	}
	if cl, ok := c.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
	return fd, nil
}

// read and write never block (the sockets are non-blocking): a raw system call spares the
// scheduler's bookkeeping around it.
func read(fd int, b []byte) (int, unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

func write(fd int, b []byte) (int, unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

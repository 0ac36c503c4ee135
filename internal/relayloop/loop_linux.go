//go:build linux

package relayloop

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Loop is one event loop: a goroutine locked to its OS thread, waiting in epoll
// (level-triggered) on the sockets of its pairs, or on an io_uring (ring_linux.go).
type Loop struct {
	epfd, evfd int
	bufBytes   int
	ring       *ringIO // nil on epoll

	mu     sync.Mutex
	cmds   []func()
	closed bool
	exited chan struct{}

	// Only the loop's thread touches these.
	ends   fdTable[*end]
	events []unix.EpollEvent
	// begun holds the pairs whose A has a message half sent, under a MessageTimeout.
	begun map[*pair]struct{}
	// stalled holds the pairs whose bytes for A wait for A's socket, under a WriteTimeout.
	stalled map[*pair]struct{}
	// stopped holds the pairs that stopped in this turn, whose buffers go to bufs after it.
	stopped []*pair
	bufs    buffers
	spin    spinner
	raw     rawWaiter

	ctls   atomic.Int64 // epoll_ctl calls on the loop's set (tests)
	fcntls atomic.Int64 // sockets made non-blocking at a plug (tests)
	waits  atomic.Int64 // io_uring_enter calls made only to await a cancelled request (tests)
	// recvArms counts the receives a ring armed, pollFirsts those armed to poll first (tests).
	recvArms, pollFirsts atomic.Int64
	// emptyLooks counts a ring's turns that entered it without waiting and found nothing (tests).
	emptyLooks atomic.Int64
	// quietWaits counts a ring's turns that submitted quiet sends and waited in one enter.
	quietWaits atomic.Int64
	// quietLapsed counts those that ended with no news beyond their sends' completions.
	quietLapsed atomic.Int64
	// writeClocks counts the write clocks started (WriteTimeout; tests).
	writeClocks atomic.Int64
}

// idleInterest is the epoll interest of a B kept in the set between pairs (Pair.KeepB): what a
// freshly plugged B wants, so that plugging it in changes nothing.
const idleInterest = unix.EPOLLIN | unix.EPOLLRDHUP

// kept maps the sockets kept idle by a loop (Pair.KeepB) to that loop: in its epoll set, or on
// a ring, where nothing runs for an idle socket, known non-blocking (no fcntl at its next plug).
// A file descriptor names one socket in the whole process while it is open, so one table
// serves every loop; it is shared with the sockets' owners (Release), hence the lock.
var kept struct {
	sync.Mutex
	m fdTable[*Loop]
}

// Release takes fd out of the loop whose epoll set kept it idle after an Unplug (Pair.KeepB),
// if any. Its owner calls it before closing fd or reading it elsewhere: a socket closed while
// a duplicate of it lives on would stay in the set, its events reported under a number that
// may name another socket by then.
func Release(fd int) {
	unkeep(fd)
}

// unkeep takes fd out of the table of kept sockets, and out of the epoll set that kept it.
func unkeep(fd int) {
	kept.Lock()
	if l := kept.m.get(fd); l != nil {
		kept.m.del(fd)
		if l.ring == nil {
			l.ctl(unix.EPOLL_CTL_DEL, fd, 0)
		}
	}
	kept.Unlock()
}

// ctl changes the loop's epoll set.
func (l *Loop) ctl(op, fd int, events uint32) error {
	l.ctls.Add(1)
	if op == unix.EPOLL_CTL_DEL {
		return unix.EpollCtl(l.epfd, op, fd, nil)
	}
	return unix.EpollCtl(l.epfd, op, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
}

// ErrStopped is a Result's Err when the pair was stopped from outside (Handle.Stop, Close).
var ErrStopped = errors.New("relayloop: stopped")

// BufferBytesDefault is each direction's buffer when New is given 0: the largest watched
// message, and the most bytes one read takes.
const BufferBytesDefault = 32 << 10

// New starts a loop with bufBytes per direction of each pair (0: BufferBytesDefault), on
// the default backend (BackendEnv overrides it; where io_uring cannot be set up, epoll).
func New(bufBytes int) (*Loop, error) { return NewOn(bufBytes, BackendAuto) }

// NewOn is New on the backend prefer (BackendAuto: the default), unless BackendEnv says
// otherwise.
func NewOn(bufBytes int, prefer Backend) (*Loop, error) { return NewWith(bufBytes, prefer, 0) }

// NewWith is NewOn whose waits may spin for up to spin before they sleep (spinner; 0: never).
func NewWith(bufBytes int, prefer Backend, spin time.Duration) (*Loop, error) {
	if bufBytes <= 0 {
		bufBytes = BufferBytesDefault
	}
	l := &Loop{epfd: -1, evfd: -1, bufBytes: bufBytes, exited: make(chan struct{}),
		events: make([]unix.EpollEvent, 128), begun: map[*pair]struct{}{}, stalled: map[*pair]struct{}{}, spin: spinner{bound: spin}, raw: rawWaiter{bound: rawBound}}
	ready := make(chan error, 1)
	go l.run(ready, chosenBackend(prefer))
	if err := <-ready; err != nil {
		return nil, err
	}
	return l, nil
}

// setUp makes the loop's ring, or its epoll instance, on the loop's thread (a ring made with
// SINGLE_ISSUER belongs to the thread that made it), and its eventfd.
func (l *Loop) setUp(want Backend) error {
	if want == BackendURing {
		g, err := newRingFn()
		if err == nil {
			// Blocking: the ring reads it, and a read of a non-blocking eventfd would fail
			// with EAGAIN rather than wait.
			if l.evfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
				l.ring = g
				l.ringShutdown()
				l.ring = nil
				return fmt.Errorf("relayloop: eventfd: %w", err)
			}
			l.ring = g
			return nil
		}
		logFallback(err)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("relayloop: epoll: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return fmt.Errorf("relayloop: eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(evfd)
		return fmt.Errorf("relayloop: epoll: %w", err)
	}
	l.epfd, l.evfd = epfd, evfd
	return nil
}

// Handle is a pair running on a loop.
type Handle struct {
	l *Loop
	p *pair
}

// Add starts relaying p. Its sockets are made non-blocking. The pair's Done runs once it
// stops, also when the loop is closed first.
func (l *Loop) Add(p Pair) (*Handle, error) {
	h := l.NewHandle()
	return h, h.Start(p)
}

// NewHandle is a handle for a pair not started yet (Start), for a Watch that needs its own
// handle from the first message on.
func (l *Loop) NewHandle() *Handle { return &Handle{l: l} }

// Start starts relaying p on h's loop, as Add does; once per handle.
func (h *Handle) Start(p Pair) error {
	l := h.l
	for _, fd := range []int{p.A, p.B} {
		if fd < 0 && fd == p.B {
			continue
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			return fmt.Errorf("relayloop: socket %d: %w", fd, err)
		}
	}
	if len(p.Ahead) > l.bufBytes {
		return ErrMessageTooLarge
	}
	pr := newPair(p, &l.bufs, l.bufBytes)
	h.p = pr
	if !l.do(func() { l.start(pr) }) {
		pr.finish(Result{Err: ErrStopped})
	}
	return nil
}

// Resume plugs b in as the pair's B when it has none (b < 0: plug nothing in), and frames
// again the message A's Watch held, if any. It does not wait; b is made non-blocking and
// belongs to the pair from now on, until Unplugged or Done.
func (h *Handle) Resume(b int) {
	if b >= 0 {
		_ = h.l.setNonblock(b)
	}
	h.l.do(func() { h.p.resume(h.l, b) })
}

// Plug plugs b in as the pair's B at once, on the loop's thread: only from the pair's Watch,
// looking at a message of A's while no B is plugged in. The message the Watch then lets
// through (Relay) goes to b. b is made non-blocking and belongs to the pair from now on,
// until Unplugged or Done. It fails, plugging nothing in, when b cannot be watched.
func (h *Handle) Plug(b int) error {
	if err := h.l.setNonblock(b); err != nil {
		return err
	}
	return h.p.plug(h.l, b)
}

// UnplugNow takes B out of the pair at once, as an Unplug verdict would once B's bytes are
// written to A: only on the loop's thread (from the pair's Watch, or a Do), while B is idle,
// nothing of A's framed for it. Pair.Unplugged runs before it returns. It is false, and
// nothing changes, when no B is plugged in or what B sent is still being written to A (a
// client slow to read): a caller that must have B out then stops the pair instead.
func (h *Handle) UnplugNow() bool {
	p := h.p
	if p.done || p.p.B < 0 || p.st[BToA].busy() || p.st[AToB].w < p.st[AToB].s || p.st[AToB].skip > 0 {
		return false
	}
	p.unplug(h.l)
	return true
}

// Writing reports, on the loop's thread, whether direction d has framed bytes still to write
// to its peer (or an end or unplug waiting for them).
func (h *Handle) Writing(d Direction) bool { return h.p.st[d].busy() }

// Do runs fn on the loop's thread, unless the pair has stopped by then. It does not wait.
func (h *Handle) Do(fn func()) {
	h.l.do(func() {
		if !h.p.done {
			fn()
		}
	})
}

// setNonblock makes fd non-blocking unless the loop keeps it idle, already non-blocking (an
// fcntl spared on every transaction; two where the socket was blocking).
func (l *Loop) setNonblock(fd int) error {
	kept.Lock()
	mine := kept.m.get(fd) == l
	kept.Unlock()
	if mine {
		return nil
	}
	l.fcntls.Add(1)
	if err := unix.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("relayloop: socket %d: %w", fd, err)
	}
	return nil
}

// Replacing is the Replace verdict, with the bytes to relay in the message's stead (whole
// messages of the direction's protocol, already framed: the Watch does not see them): only
// from the pair's Watch, on the loop's thread. msg is copied once the Watch returns.
func (h *Handle) Replacing(msg []byte) Verdict {
	h.p.replacement = msg
	return Replace
}

// Answering is the Answer verdict, with the bytes to write back to A in the message's stead
// (whole messages of B's protocol): only from the pair's Watch, on the loop's thread, looking
// at a message of A's while no B is plugged in. msg is copied once the Watch returns.
func (h *Handle) Answering(msg []byte) Verdict {
	h.p.replacement = msg
	return Answer
}

// StopIf ends the pair as Stop does when cond, run on the loop's thread, says so. It does not
// wait.
func (h *Handle) StopIf(cond func() bool) {
	h.l.do(func() {
		if !h.p.done && cond() {
			h.p.stop(h.l, Result{Err: ErrStopped})
		}
	})
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

func (l *Loop) run(ready chan<- error, want Backend) {
	runtime.LockOSThread()
	if err := l.setUp(want); err != nil {
		ready <- err
		return
	}
	ready <- nil
	defer close(l.exited)
	if l.ring != nil {
		l.runRing()
		return
	}
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
			if e := l.ends.get(int(ev.Fd)); e != nil {
				e.p.event(l, e.side, ev.Events)
			} else {
				l.wokeIdle(int(ev.Fd))
			}
		}
		if len(l.begun) > 0 || len(l.stalled) > 0 {
			l.expire(time.Now())
		}
		if len(l.stopped) > 0 {
			l.recycle()
		}
	}
}

// expire stops the pairs whose A left a message half sent for longer than their timeout, or
// whose writes to A made no progress for longer than theirs (expireStalled).
func (l *Loop) expire(now time.Time) {
	l.expireStalled(now)
	for p := range l.begun {
		if now.Sub(p.begun) >= p.p.MessageTimeout && p.st[AToB].inflight == nil {
			p.stop(l, Result{Err: ErrMessageTimeout, Side: AToB})
		}
	}
}

// waitMillis is how long epoll may wait: until the first message or write timeout, else for
// ever.
func (l *Loop) waitMillis() int {
	if len(l.begun) == 0 && len(l.stalled) == 0 {
		return -1
	}
	now := time.Now()
	soonest := time.Duration(1<<63 - 1)
	for p := range l.begun {
		soonest = min(soonest, p.p.MessageTimeout-now.Sub(p.begun))
	}
	for p := range l.stalled {
		soonest = min(soonest, p.p.WriteTimeout-now.Sub(p.stalled))
	}
	// Rounded up: waking a millisecond late is fine, waking early only loops again.
	return max(int((soonest+time.Millisecond-1)/time.Millisecond), 0)
}

// wait polls without blocking first (no hand-off of the thread's processor when events are
// already there, the common case under load), spins when the spinner allows, then blocks.
func (l *Loop) wait() (int, error) {
	if n := l.poll(); n > 0 {
		return n, nil
	}
	start, n := l.spin.begin(), 0
	if l.spin.try(start, func() bool { n = l.poll(); return n > 0 }) {
		return n, nil
	}
	ms := l.waitMillis()
	if l.raw.begin() {
		bound := l.raw.boundMillis(ms)
		r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), uintptr(bound), 0, 0)
		n = int(r)
		if e != 0 {
			n = 0
		}
		// A wait cut short by a signal, or ended by the loop's own timeout, says nothing of rest.
		l.raw.end(n > 0 || e != 0 || bound < l.raw.boundMillis(-1))
		l.spin.end(start)
		if e == unix.EINTR {
			// A signal (the monitor's preemption, which the loop's goroutine obeys at its next
			// call, handing its thread over and waiting to get it back) cut the wait short:
			// look again once back, so that what came meanwhile is read before any timeout
			// is judged.
			return l.poll(), nil
		}
		if e != 0 {
			return 0, e
		}
		return n, nil
	}
	t := l.raw.from(start)
	n, err := unix.EpollWait(l.epfd, l.events, ms)
	l.spin.end(start)
	l.raw.slept(t)
	return n, err
}

// poll is epoll_wait without blocking: the number of events there now.
func (l *Loop) poll() int {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if e != 0 {
		return 0
	}
	return int(r)
}

// commands runs what other goroutines asked for; true when the loop must end.
func (l *Loop) commands() bool {
	if l.ring == nil { // (the ring's read took the count)
		var b [8]byte
		_, _ = unix.Read(l.evfd, b[:])
	}
	l.mu.Lock()
	cmds, closed := l.cmds, l.closed
	l.cmds = nil
	l.mu.Unlock()
	for _, fn := range cmds {
		fn()
	}
	return closed
}

// wokeIdle handles an event of a socket kept idle (Pair.KeepB): its peer spoke or hung up
// between pairs. It leaves the set, or epoll would report it again and again; whoever plugs
// it in next reads what there is.
func (l *Loop) wokeIdle(fd int) {
	kept.Lock()
	if kept.m.get(fd) == l {
		kept.m.del(fd)
		_ = l.ctl(unix.EPOLL_CTL_DEL, fd, 0)
	}
	kept.Unlock()
}

func (l *Loop) shutdown() {
	stopped := map[*pair]bool{}
	for _, e := range l.ends.s {
		if e != nil && !stopped[e.p] {
			stopped[e.p] = true
			e.p.stop(l, Result{Err: ErrStopped})
		}
	}
	kept.Lock()
	for fd, kl := range kept.m.s {
		if kl == l {
			kept.m.del(fd)
		}
	}
	kept.Unlock()
	if l.ring != nil {
		l.ringShutdown()
	} else {
		_ = unix.Close(l.epfd)
	}
	_ = unix.Close(l.evfd)
}

func (l *Loop) start(p *pair) {
	for s := range 2 {
		fd := p.fd(Direction(s))
		if fd < 0 {
			continue
		}
		l.ends.set(fd, &p.ends[s])
		if l.ring != nil {
			continue // settle arms its receive
		}
		if err := l.add(fd, p.interest(Direction(s))); err != nil {
			p.stop(l, Result{Err: fmt.Errorf("relayloop: epoll_ctl add %d: %w", fd, err), Side: Direction(s)})
			return
		}
	}
	p.registered = true
	if l.ring != nil {
		l.touch(p)
	}
	if st := &p.st[AToB]; st.r > 0 && !p.done { // Ahead
		if p.scan(l, AToB) {
			p.flush(l, AToB)
		}
		if !p.done {
			p.update(l)
		}
	}
}

// setInterest updates what epoll reports for a socket of p.
func (l *Loop) setInterest(p *pair, side Direction) {
	if l.ring != nil {
		l.touch(p)
		return
	}
	ev := p.interest(side)
	if ev == p.cur[side] || p.fd(side) < 0 {
		return
	}
	p.cur[side] = ev
	fd := p.fd(side)
	if err := l.ctl(unix.EPOLL_CTL_MOD, fd, ev); err != nil {
		p.stop(l, Result{Err: fmt.Errorf("relayloop: epoll_ctl mod %d: %w", fd, err), Side: side})
	}
}

// add puts fd in the loop's set with events, or changes its events when the set kept it idle
// (Pair.KeepB). A socket kept idle by another loop leaves that loop's set.
func (l *Loop) add(fd int, events uint32) error {
	kept.Lock()
	kl := kept.m.get(fd)
	if kl != nil {
		kept.m.del(fd)
		if kl != l && kl.ring == nil {
			_ = kl.ctl(unix.EPOLL_CTL_DEL, fd, 0)
		}
	}
	kept.Unlock()
	switch {
	case kl != l:
		return l.ctl(unix.EPOLL_CTL_ADD, fd, events)
	case events != idleInterest:
		return l.ctl(unix.EPOLL_CTL_MOD, fd, events)
	}
	return nil
}

func (l *Loop) forget(p *pair) {
	for s := range 2 {
		fd := p.fd(Direction(s))
		if e := l.ends.get(fd); fd < 0 || e == nil || e.p != p {
			continue
		}
		if p.registered && l.ring == nil {
			_ = l.ctl(unix.EPOLL_CTL_DEL, fd, 0)
		}
		l.ends.del(fd)
	}
	delete(l.begun, p)
	delete(l.stalled, p)
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

// readFrom reads what socket side of p has for its stream: from the ring's receive queue, or
// the socket.
func (l *Loop) readFrom(p *pair, side Direction, b []byte) (int, syscall.Errno) {
	if l.ring != nil {
		return l.take(p, side, b)
	}
	return read(p.fd(side), b)
}

// read and write never block (the sockets are non-blocking): a raw system call spares the
// scheduler's bookkeeping around it.
func read(fd int, b []byte) (int, syscall.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

func write(fd int, b []byte) (int, syscall.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

// waitReadable waits up to d for fd to have bytes or an end to read, in a blocking system call
// (the runtime hands this thread's work to another meanwhile).
func waitReadable(fd int, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	ts := unix.NsecToTimespec(d.Nanoseconds())
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Ppoll(fds[:], &ts, nil)
	return err == nil && n > 0
}

func closeFD(fd int) error { return unix.Close(fd) }

func shutdownFD(fd int) error { return unix.Shutdown(fd, unix.SHUT_RDWR) }

// peek reports whether fd has bytes to read or an end (EOF, an error) without taking them.
func peek(fd int) bool {
	var b [1]byte
	_, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err != unix.EAGAIN
}

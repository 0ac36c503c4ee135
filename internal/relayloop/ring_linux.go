//go:build linux

package relayloop

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/uring"
)

// The io_uring backend. A loop on a ring receives each socket of its pairs through a multishot
// receive into a buffer ring the loop shares among its pairs, and sends through send requests
// that go to the kernel with the next io_uring_enter: a turn of the loop is one system call
// however many sockets it reads and writes, where epoll costs a read and a write per message
// beside the wait (RESULTS.md, session 23 and 24: 5-8 CPU us less per transaction).
//
// What epoll gets by leaving a socket unread, the ring must undo: a receive takes the socket's
// bytes as they come. So every handback (a pair's stop, an Unplug) cancels the socket's receive
// and waits for its last completion (quiesce), and the bytes it brought that the pair did not
// take go to the Leftover (or Unplugged's rest); a send in flight is cancelled and its result
// awaited too, so that the Leftover starts where the peer's bytes stopped. A socket whose stream
// cannot take bytes for now (its send in flight, held, ending) keeps its receive until one
// buffer's worth waits, then it is cancelled: the shared buffers are not all taken by one peer
// that talks while nobody listens. A B unplugged with KeepB keeps no receive: the ring has no
// idle state that costs nothing, and its next plug arms one in the turn's enter. It is kept all
// the same (the table of kept sockets), as known non-blocking: its next plug makes no fcntl.
//
// Such a B (a pooled engine connection, unplugged at the end of each transaction's answer),
// unless it says it stays (Pair.StayB: a MySQL client's engine connection kept between its
// statements, whose receive stays armed, multishot), is received one completion at a time, each receive armed again by the turn's enter, while its
// answers come in pieces smaller than a buffer: its unplug then finds no receive running, where
// cancelling a multishot one and awaiting its end took an io_uring_enter of its own every
// transaction (RESULTS.md, session 25: 1.75 against 0.81 enters per transaction in session
// mode). A piece that fills a buffer means a large answer: its receives are multishot from then
// on, until the unplug.

// Backend names a loop's way of waiting for its sockets.
type Backend string

const (
	// BackendAuto is BackendURing where io_uring works, else BackendEpoll.
	BackendAuto  Backend = ""
	BackendEpoll Backend = "epoll"
	BackendURing Backend = "uring"
)

// BackendEnv is the environment variable that forces a backend on every loop of the process:
// "epoll" or "uring" ("uring" falls back to epoll where io_uring cannot be set up, as the
// default does).
const BackendEnv = "QUERYFLUX_RELAY_BACKEND"

// backendDefault is what BackendAuto means where its user prefers neither: epoll, as the ring
// was not shown cheaper for the PostgreSQL passthrough (RESULTS.md, session 24).
var backendDefault = BackendEpoll

// forcedBackend overrides the environment (tests run their loops on each backend).
var forcedBackend Backend

// chosenBackend is the backend New tries: forced by a test or the environment, else prefer,
// else the default.
func chosenBackend(prefer Backend) Backend {
	if forcedBackend != BackendAuto {
		return forcedBackend
	}
	switch b := Backend(os.Getenv(BackendEnv)); b {
	case BackendEpoll, BackendURing:
		return b
	}
	if prefer != BackendAuto {
		return prefer
	}
	return backendDefault
}

// fellBack logs once per process that io_uring could not be set up.
var fellBack sync.Once

// Backend is the backend the loop runs on.
func (l *Loop) Backend() Backend {
	if l.ring != nil {
		return BackendURing
	}
	return BackendEpoll
}

const (
	ringEntries = 1024
	// ringBufs x ringBufBytes is the buffer ring each loop shares among its pairs' receives.
	ringBufs     = 512
	ringBufBytes = 8 << 10
)

// Completion kinds, in a request's user data beside the socket's number.
const (
	kindNone   = 0 // a completion a quiesce already handled
	kindWake   = 1
	kindRecv   = 2
	kindSend   = 3
	kindCancel = 4
)

func userData(kind, fd int) uint64 { return uint64(fd)<<8 | uint64(kind) }

// ringIO is a loop's ring and what only the loop's thread touches of it.
type ringIO struct {
	r    *uring.Ring
	bufs *uring.BufRing
	free int    // buffers the kernel may fill
	evb  []byte // the eventfd's 8 bytes, written by the kernel (mmapped, not Go's heap)
	// cqes are the completions taken from the ring in this turn, handled in order (next); a
	// quiesce takes more and handles those of its pair at once.
	cqes []uring.CQE
	next int
	// touched are the pairs whose sockets may need a receive armed or bytes pumped at the
	// turn's end (the ring's stand-in for level-triggered readiness).
	touched []*pair
	// starved are the pairs with a receive ended for want of buffers, touched again once some
	// are back.
	starved []*pair
	closing bool
	// flagged: the kernel flags deferred completions (uring.Ring.TaskWork), so a turn with
	// nothing to submit and none flagged waits at once rather than looking first.
	flagged bool
	// quiet counts the quiet sends (pair.quietSend) queued since the last enter; loud says
	// that another send was.
	quiet int
	loud  bool
}

// quietMax is the most bytes a quiet send carries: a message or a small answer, which a
// socket's buffer takes at once.
const quietMax = 16 << 10

// recvQ is what a socket's receive brought that its stream has not taken yet.
type recvQ struct {
	chunks     []chunk // chunks[head:] wait; the array is kept for the next ones (no allocation)
	head       int
	queued     int  // bytes in chunks
	armed      bool // a multishot receive runs (its last completion not seen)
	cancelling bool
	starved    bool          // the receive ended for want of buffers: re-armed once some are back
	bulk       bool          // a completion filled a buffer: the socket's receives are multishot from now on
	asked      bool          // B was just plugged in: its first receive awaits the answer to what is sent to it
	eof        bool          // the peer closed its end (after the chunks)
	err        syscall.Errno // the receive failed (after the chunks)
}

type chunk struct {
	bid    uint16
	off, n int
}

// waiting reports whether chunks wait.
func (q *recvQ) waiting() bool { return q.head < len(q.chunks) }

// reset empties q, keeping its array.
func (q *recvQ) reset() { *q = recvQ{chunks: q.chunks[:0]} }

// newRing sets up l's ring on the calling (locked) thread.
func newRing() (*ringIO, error) {
	const flags = uring.SetupSingleIssuer | uring.SetupDeferTaskrun | uring.SetupSubmitAll
	flagged := true
	r, err := uring.New(ringEntries, flags|uring.SetupTaskrunFlag)
	if err != nil { // a kernel that takes no TASKRUN_FLAG with DEFER_TASKRUN: every turn looks
		flagged = false
		r, err = uring.New(ringEntries, flags)
	}
	if err != nil {
		return nil, err
	}
	if err := r.RegisterRingFD(); err != nil {
		_ = r.Close()
		return nil, err
	}
	bufs, err := r.RegisterBufRing(0, ringBufs, ringBufBytes)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	evb, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		_ = r.Close()
		bufs.Free()
		return nil, fmt.Errorf("relayloop: mmap: %w", err)
	}
	return &ringIO{r: r, bufs: bufs, free: ringBufs, evb: evb, flagged: flagged}, nil
}

// sqe is a free submission entry, submitting the queue first when it is full.
func (g *ringIO) sqe() *uring.SQE {
	for {
		if s := g.r.SQE(); s != nil {
			return s
		}
		if err := g.r.Submit(); err != nil {
			panic(fmt.Sprintf("relayloop: %v", err))
		}
		g.quiet, g.loud = 0, false // submitted
	}
}

func (l *Loop) armWake() {
	s := l.ring.sqe()
	s.Opcode, s.FD, s.Len = uring.OpRead, int32(l.evfd), 8
	s.Addr = uint64(uintptrOf(l.ring.evb))
	s.UserData = userData(kindWake, 0)
}

func (l *Loop) armRecv(p *pair, side Direction) {
	q := &p.rq[side]
	s := l.ring.sqe()
	s.Opcode, s.FD = uring.OpRecv, int32(p.fd(side))
	if side == AToB || !p.p.KeepB || p.p.StayB || q.bulk {
		s.Ioprio = uring.RecvMultishot
	}
	if q.asked {
		// The first receive of a B just plugged in comes after the request it answers, sent in
		// the same enter: an attempt would find nothing (a receive that fails, then the poll
		// armed); the poll alone is armed. (A later one may find more of an answer waiting.)
		s.Ioprio |= uring.RecvPollFirst
		q.asked = false
		l.pollFirsts.Add(1)
	}
	l.recvArms.Add(1)
	s.Flags = uring.SqeBufferSelect
	s.BufIndex = l.ring.bufs.Group
	s.UserData = userData(kindRecv, p.fd(side))
	q.armed, q.cancelling, q.starved = true, false, false
}

func (l *Loop) cancel(kind, fd int) {
	s := l.ring.sqe()
	s.Opcode = uring.OpAsyncCancel
	s.Addr = userData(kind, fd)
	s.UserData = userData(kindCancel, fd)
}

// send queues a send of st.buf[w:s] to fd; its completion goes on with the stream (sent).
// A quiet one (pair.quietSend) never waits in the kernel (MSG_DONTWAIT: the ring completes it
// at its submission, with what the socket took, or EAGAIN when it took nothing) and is counted
// in the turn's quiet sends; what it left is sent by a loud send, which waits for room.
func (l *Loop) send(st *stream, fd int, quiet bool) {
	b := st.buf[st.w:st.s]
	s := l.ring.sqe()
	s.Opcode, s.FD = uring.OpSend, int32(fd)
	s.Addr, s.Len = uint64(uintptrOf(b)), uint32(len(b))
	s.OpFlags = unix.MSG_NOSIGNAL
	st.quiet = quiet && len(b) <= quietMax && !st.short && st.roomFor(fd, len(b))
	if !st.quiet {
		st.sentLoud()
	}
	if st.quiet {
		s.OpFlags |= unix.MSG_DONTWAIT
		l.ring.quiet++
	} else {
		l.ring.loud = true
	}
	s.UserData = userData(kindSend, fd)
	st.inflight = b // keeps the memory the kernel reads alive, whatever becomes of st.buf
}

// roomFor reports whether fd's socket surely takes n bytes whole at once, and if so counts
// them as sent: n and what the stream sent since the socket's send queue was last seen empty
// (on TCP the bytes its peer has not acknowledged, on a Unix socket those its peer has not
// read) are within a quarter of its send buffer, each send counted with skbOverhead (what the
// socket's memory accounting charges beyond the bytes stays below the buffer). Past that, the
// queue is looked at (TIOCOUTQ, one system call): empty, the count starts again. A quiet send
// that the socket took only in part would leave its rest to a turn that nothing starts: the
// enter that submitted it waits for one completion more, and a peer that waits for the rest
// sends none (TestAUnixSocketEngineLegRelaysWholeResults: a client behind 4 KiB buffers, the
// last few KB of its result stalled until another pair's news).
func (st *stream) roomFor(fd, n int) bool {
	if st.sndbufFD != fd || st.sndbuf == 0 {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			return false
		}
		st.sndbuf, st.sndbufFD, st.unconfirmed = v, fd, v // unknown: looked at below
	}
	cost, budget := n+skbOverhead, st.sndbuf/4
	if cost > budget {
		return false
	}
	if st.unconfirmed+cost > budget {
		// The buffer read again too (the kernel shrinks it under memory pressure).
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			return false
		}
		if st.sndbuf, budget = v, v/4; cost > budget {
			return false
		}
		if queued, err := unix.IoctlGetInt(fd, unix.TIOCOUTQ); err != nil || queued != 0 {
			return false
		}
		st.unconfirmed = 0
	}
	st.unconfirmed += cost
	return true
}

// sentLoud notes a send not counted by roomFor (a loud one, which may fill the socket): the
// next quiet send looks at the socket's queue first.
func (st *stream) sentLoud() { st.unconfirmed = st.sndbuf }

// skbOverhead is what roomFor counts for a send beyond its bytes: a socket buffer's own
// memory (its truesize beyond the data, ~0.7-1 KiB for a small segment).
const skbOverhead = 1 << 10

// quietSend reports whether the send of stream d's framed bytes, about to be queued, is
// quiet: its completion, once all of it is sent, asks nothing of the loop but to take it
// (no unplug or end waits for it, nothing its source brought waits behind it), and what
// the loop awaits next is the peer's answer to it, or other news. A turn whose only news
// are quiet sends then submits them and awaits their completions and one more in the same
// io_uring_enter (quietWait), where it took a look to submit them and a wait after. Its
// source's receive runs (armed, not being cancelled): more of what the source sends comes as
// a completion that ends the wait, where a receive cancelled for want of room (its bytes left
// in the socket until this send's completion lets the stream read again) would leave the wait
// to nothing but the peer's answer, which awaits those bytes. A stream whose last quiet send
// found its peer's socket short of room (stream.short) sends loud until a send of it
// completes whole.
func (p *pair) quietSend(d Direction) bool {
	st, q := &p.st[d], &p.rq[d]
	return !st.unplug && st.pending == nil && !q.waiting() && q.armed && !q.cancelling
}

// runRing is the loop on the ring: look without blocking first (no hand-off of the thread
// while completions are arriving, as the epoll loop does), then wait. A turn with nothing to
// submit, no completion in the queue and none flagged as waiting to be run (ringIO.flagged)
// would find nothing by looking: it waits at once, one io_uring_enter where a look and a wait
// took two (the wait runs what comes meanwhile before it sleeps, and wakes at what comes later).
func (l *Loop) runRing() {
	g := l.ring
	l.armWake()
	for !g.closing {
		g.bufs.Publish()
		if g.next == len(g.cqes) { // (else a quiesce took completions not handled yet)
			looked := !g.flagged || g.r.Pending() > 0 || g.r.TaskWork()
			if looked && l.mayWaitQuiet() {
				l.quietWait()
				looked = false
			} else if looked {
				if err := g.r.GetEvents(); err != nil {
					panic(fmt.Sprintf("relayloop: %v", err))
				}
			}
			if g.r.Ready() == 0 {
				if looked {
					l.emptyLooks.Add(1)
				}
				l.ringWait()
			}
		}
		g.quiet, g.loud = 0, false
		l.reap()
		for g.next < len(g.cqes) && !g.closing {
			c := g.cqes[g.next]
			g.next++
			l.complete(c)
		}
		l.settle()
		if len(l.begun) > 0 || len(l.stalled) > 0 {
			l.expire(time.Now())
			l.settle()
		}
		if g.next == len(g.cqes) {
			g.cqes, g.next = g.cqes[:0], 0
		}
		if len(l.stopped) > 0 {
			l.recycle()
		}
	}
	l.shutdown()
}

// mayWaitQuiet reports whether the turn's enter may wait at once (quietWait): the ring flags
// deferred completions, none is flagged or waits in the queue, the only submissions queued
// since the last enter are receives and quiet sends (one at least), and the loop would not
// spin before it slept (a spin, where the machine has idle CPU, spares a wake-up).
func (l *Loop) mayWaitQuiet() bool {
	g := l.ring
	return g.flagged && g.quiet > 0 && !g.loud && g.r.Ready() == 0 && !g.r.TaskWork() && !l.spin.mightSpin()
}

// quietWait submits the turn's requests and awaits, in the same io_uring_enter, the quiet
// sends' completions and one more (the answer to what was sent, or other news), bounded as
// the loop's own wait is (waitMillis) and by nothing else. A quiet send never waits for room
// (MSG_DONTWAIT), so its completion is posted as the enter submits it: the wait is for the one
// more alone, whatever the peers do. No timer is armed for it (session 40's bound on the wait,
// IORING_ENTER_EXT_ARG's min_wait, armed one at every wait that slept: with its cancel at the
// wake-up, a timer programmed twice a statement, which cost a guest's daemon more CPU than the
// enter it spared; RESULTS.md, session 41).
func (l *Loop) quietWait() {
	g := l.ring
	l.quietWaits.Add(1)
	start := l.spin.begin() // a wait that never spins, whose length decides whether the next may
	defer l.spin.end(start)
	var err error
	if ms := l.waitMillis(); l.raw.begin() {
		err = l.rawRingWait(g.quiet+1, ms, func() bool { return g.r.Ready() > g.quiet })
	} else {
		t := l.raw.from(start)
		if ms >= 0 {
			err = g.r.SubmitAndWaitTimeout(g.quiet+1, time.Duration(ms)*time.Millisecond)
		} else {
			err = g.r.SubmitAndWait(g.quiet + 1)
		}
		l.raw.slept(t)
	}
	if err != nil {
		panic(fmt.Sprintf("relayloop: %v", err))
	}
	if g.r.Ready() <= g.quiet {
		l.quietLapsed.Add(1)
	}
}

// ringWait awaits a completion: spinning first, when the spinner allows, then asleep.
func (l *Loop) ringWait() {
	start := l.spin.begin()
	if l.spin.try(start, l.ringReady) {
		return
	}
	var err error
	if ms := l.waitMillis(); l.raw.begin() {
		err = l.rawRingWait(1, ms, func() bool { return l.ring.r.Ready() > 0 })
	} else {
		t := l.raw.from(start)
		if ms >= 0 {
			err = l.ring.r.SubmitAndWaitTimeout(1, time.Duration(ms)*time.Millisecond)
		} else {
			err = l.ring.r.SubmitAndWait(1)
		}
		l.raw.slept(t)
	}
	if err != nil {
		panic(fmt.Sprintf("relayloop: %v", err))
	}
	l.spin.end(start)
}

// rawRingWait is a raw wait (rawWaiter) on the ring for want completions, bounded by the
// raw bound and by ms (>= 0: the loop's own next timeout); news says whether it got any.
func (l *Loop) rawRingWait(want, ms int, news func() bool) error {
	bound := l.raw.boundFor(ms)
	err := l.ring.r.SubmitAndWaitRaw(want, bound)
	if err == unix.EINTR {
		// A signal (the monitor's preemption): no sign of rest. The loop's goroutine obeys it
		// at its next call, handing its thread over and waiting to get it back: look again
		// once back, so that what completed meanwhile is taken before any timeout is judged.
		l.raw.end(true)
		return l.ring.r.GetEvents()
	}
	if err == unix.ETIME {
		// A wait ended by the loop's own timeout says nothing of rest either.
		l.raw.end(bound < l.raw.bound || news())
		return nil
	}
	l.raw.end(true)
	return err
}

// ringReady enters the ring to take what has completed (a receive's completion is posted when
// the loop's thread enters it); whether anything has.
func (l *Loop) ringReady() bool {
	if err := l.ring.r.GetEvents(); err != nil {
		panic(fmt.Sprintf("relayloop: %v", err))
	}
	return l.ring.r.Ready() > 0
}

// reap moves the ring's completions to g.cqes; it returns where the new ones start.
func (l *Loop) reap() int {
	g := l.ring
	from := len(g.cqes)
	g.r.Completions(func(c *uring.CQE) { g.cqes = append(g.cqes, *c) })
	return from
}

func (l *Loop) complete(c uring.CQE) {
	kind, fd := int(c.UserData&0xff), int(c.UserData>>8)
	switch kind {
	case kindWake:
		if c.Res < 0 && c.Res != -int32(unix.EINTR) && c.Res != -int32(unix.EAGAIN) {
			panic(fmt.Sprintf("relayloop: eventfd read: %v", syscall.Errno(-c.Res)))
		}
		if l.commands() {
			l.ring.closing = true
			return
		}
		l.armWake()
	case kindRecv:
		e := l.ends.get(fd)
		if e == nil { // cannot be: a socket leaves the loop only once quiesced
			l.putBuf(c)
			return
		}
		l.received(e.p, e.side, c)
		l.touch(e.p)
	case kindSend:
		e := l.ends.get(fd)
		if e == nil {
			return
		}
		p, d := e.p, 1-e.side
		eagain := c.Res == -int32(unix.EAGAIN) && p.st[d].quiet // a quiet send's socket had no room
		l.sent(p, d, c.Res)
		if !p.done {
			if c.Res < 0 && !eagain {
				p.stop(l, Result{Err: fmt.Errorf("relayloop: write: %w", syscall.Errno(-c.Res)), Side: d})
				return
			}
			p.flush(l, d)
		}
		l.touch(p)
	}
}

func (l *Loop) putBuf(c uring.CQE) {
	if c.Flags&uring.CQEFBuffer != 0 {
		l.ring.bufs.Put(uint16(c.Flags >> 16))
		l.ring.free++
	}
}

// received records a receive's completion in the socket's queue.
func (l *Loop) received(p *pair, side Direction, c uring.CQE) {
	q := &p.rq[side]
	if c.Flags&uring.CQEFBuffer != 0 {
		l.ring.free--
		if c.Res > 0 {
			q.chunks = append(q.chunks, chunk{bid: uint16(c.Flags >> 16), n: int(c.Res)})
			q.queued += int(c.Res)
			q.bulk = q.bulk || c.Res == ringBufBytes
		} else {
			l.putBuf(c)
		}
	}
	if c.Flags&uring.CQEFMore != 0 {
		return
	}
	q.armed, q.cancelling = false, false
	switch {
	case c.Res == 0:
		q.eof = true
	case c.Res == -int32(unix.ENOBUFS):
		q.starved = true
		l.ring.starved = append(l.ring.starved, p)
	case c.Res == -int32(unix.ECANCELED) || c.Res > 0:
	default:
		q.err = syscall.Errno(-c.Res)
	}
}

// sent records a send's completion: the bytes it wrote are written.
func (l *Loop) sent(p *pair, d Direction, res int32) {
	st := &p.st[d]
	if res > 0 {
		st.w += int(res)
		st.out += int(res)
	}
	// A quiet send the socket did not take whole leaves the rest to a loud one, which waits
	// for room; a send that went whole lets the stream's next ones be quiet again.
	if whole := int(res) == len(st.inflight); st.quiet && !whole {
		st.short = true
	} else if whole {
		st.short = false
	}
	st.inflight = nil
}

func (l *Loop) touch(p *pair) {
	if !p.touched {
		p.touched = true
		l.ring.touched = append(l.ring.touched, p)
	}
}

// canRead reports whether stream d takes bytes now.
func (p *pair) canRead(d Direction) bool {
	st := &p.st[d]
	return !st.blocked && st.pending == nil && !st.held && !st.unplug
}

// settle does for the touched pairs what level-triggered readiness does for epoll's: a stream
// that can take bytes gets those its socket's receive queued (pump), a socket with none has a
// receive armed, and one that queues bytes no stream takes has it cancelled.
func (l *Loop) settle() {
	g := l.ring
	for {
		for i := 0; i < len(g.touched); i++ {
			l.settlePair(g.touched[i])
		}
		clear(g.touched)
		g.touched = g.touched[:0]
		if len(g.starved) == 0 || g.free == 0 {
			return
		}
		for _, p := range g.starved {
			l.touch(p)
		}
		clear(g.starved)
		g.starved = g.starved[:0]
	}
}

func (l *Loop) settlePair(p *pair) {
	p.touched = false
	for s := range 2 {
		d := Direction(s)
		if p.done || p.fd(d) < 0 {
			continue
		}
		q := &p.rq[d]
		switch {
		case p.canRead(d) && (q.waiting() || q.eof || q.err != 0):
			p.pump(l, d)
			l.touch(p) // again: it may take more, or want its receive again
		case p.canRead(d) && !q.armed && (!q.starved || l.ring.free > 0):
			l.armRecv(p, d)
		case q.err != 0:
			// The socket failed while its stream takes nothing: as epoll's EPOLLERR.
			p.stop(l, Result{Err: ErrClosed, Side: d})
		case !p.canRead(d) && q.armed && !q.cancelling && q.queued >= ringBufBytes:
			l.cancel(kindRecv, p.fd(d))
			q.cancelling = true
		}
	}
}

// take moves the bytes side's receive queued into b, giving the buffers back; as read does:
// EAGAIN when none wait, 0 at the peer's end.
func (l *Loop) take(p *pair, side Direction, b []byte) (int, syscall.Errno) {
	q := &p.rq[side]
	n := 0
	for q.waiting() && n < len(b) {
		c := &q.chunks[q.head]
		k := copy(b[n:], l.ring.bufs.Buf(c.bid, c.n)[c.off:])
		n += k
		c.off += k
		q.queued -= k
		if c.off == c.n {
			l.ring.bufs.Put(c.bid)
			l.ring.free++
			q.head++
		}
	}
	if !q.waiting() {
		q.chunks, q.head = q.chunks[:0], 0
	}
	switch {
	case n > 0:
		return n, 0
	case q.err != 0:
		return 0, q.err
	case q.eof:
		return 0, 0
	}
	return 0, unix.EAGAIN
}

// drain takes what side's receive queued, giving the buffers back, and appends it to out.
func (l *Loop) drain(p *pair, side Direction, out []byte) []byte {
	q := &p.rq[side]
	for _, c := range q.chunks[q.head:] {
		out = append(out, l.ring.bufs.Buf(c.bid, c.n)[c.off:]...)
		l.ring.bufs.Put(c.bid)
		l.ring.free++
	}
	q.reset()
	return out
}

// quiesce ends the requests the ring runs for p's sockets (side only, or both when only < 0):
// their receives and the sends to them are cancelled, and their last completions awaited and
// recorded, so that the sockets and the pair's buffers are the pair's alone again.
func (l *Loop) quiesce(p *pair, only int) {
	var recv, send [2]bool
	for s := range 2 {
		if (only < 0 || s == only) && p.fd(Direction(s)) >= 0 {
			recv[s], send[1-s] = true, true
		}
	}
	l.await(p, recv, send)
}

// quiesceSend ends stream d's send in flight (cancelled where the peer takes nothing), and
// lets the stream send again (flush).
func (l *Loop) quiesceSend(p *pair, d Direction) {
	var send [2]bool
	send[d] = true
	l.await(p, [2]bool{}, send)
	p.st[d].blocked = false
}

// await cancels the receives of p's sockets recv[s] and the sends of its streams send[d], and
// waits for their last completions, recording them (the others taken meanwhile are handled
// later, in order).
func (l *Loop) await(p *pair, recv, send [2]bool) {
	g := l.ring
	outstanding := func() bool {
		for s := range 2 {
			if recv[s] && p.rq[s].armed || send[s] && p.st[s].inflight != nil {
				return true
			}
		}
		return false
	}
	// A send goes to the kernel first and what it has done runs (a send to a socket with room
	// completes here, also one whose first try found none): only one that still waits after
	// that is cancelled. (A receive is cancelled at once: it never ends by itself.)
	if send[0] && p.st[0].inflight != nil || send[1] && p.st[1].inflight != nil {
		g.bufs.Publish()
		if err := g.r.GetEvents(); err != nil {
			panic(fmt.Sprintf("relayloop: %v", err))
		}
		g.quiet, g.loud = 0, false
		l.reap()
	}
	for from, cancelled := g.next, false; ; {
		for i := from; i < len(g.cqes); i++ {
			c := &g.cqes[i]
			kind, fd := int(c.UserData&0xff), int(c.UserData>>8)
			for s := range 2 {
				switch {
				case kind == kindRecv && recv[s] && p.fd(Direction(s)) == fd:
					l.received(p, Direction(s), *c)
				case kind == kindSend && send[s] && p.fd(1-Direction(s)) == fd:
					l.sent(p, Direction(s), c.Res)
				default:
					continue
				}
				c.UserData = kindNone // (one socket of p has this number)
			}
		}
		if !outstanding() {
			return
		}
		if !cancelled {
			cancelled = true
			for s := range 2 {
				if recv[s] && p.rq[s].armed {
					l.cancel(kindRecv, p.fd(Direction(s)))
					p.rq[s].cancelling = true
				}
				if send[s] && p.st[s].inflight != nil {
					l.cancel(kindSend, p.fd(1-Direction(s)))
				}
			}
			from = len(g.cqes)
			continue
		}
		g.bufs.Publish()
		l.waits.Add(1)
		if err := g.r.SubmitAndWait(1); err != nil {
			panic(fmt.Sprintf("relayloop: %v", err))
		}
		g.quiet, g.loud = 0, false
		from = l.reap()
	}
}

// ringShutdown closes the ring once every pair is stopped (quiesced) and the wake-up's read
// has completed (closing): nothing the kernel still runs points at the memory unmapped here.
func (l *Loop) ringShutdown() {
	g := l.ring
	_ = g.r.Close()
	g.bufs.Free()
	_ = unix.Munmap(g.evb)
}

// uintptrOf is b's address, for a request's Addr: b is mmapped memory, or Go memory that the
// pair keeps referenced until the request's completion (stream.inflight).
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// logFallback says once per process that loops run on epoll for want of io_uring.
func logFallback(err error) {
	fellBack.Do(func() {
		slog.Default().Info("relayloop: io_uring could not be set up; event loops use epoll", "err", redact.Error(err))
	})
}

// newRingFn is newRing, replaced by a test that makes io_uring fail.
var newRingFn = newRing

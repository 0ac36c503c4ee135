//go:build linux

package relayloop

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// end is one socket of a pair, as the loop finds it from an event.
type end struct {
	p    *pair
	side Direction // the socket that AToB reads (A) or BToA reads (B)
}

// pair is a Pair's state on the loop's thread.
type pair struct {
	p          Pair
	st         [2]stream // st[d] reads socket d and writes the other
	ends       [2]end    // what the loop finds from each socket's events (no allocation per plug)
	cur        [2]uint32 // the epoll interest of each socket
	registered bool
	done       bool
	// begun is when A's current message began, while it is half read (MessageTimeout);
	// begunAfter is A's whole count then.
	begun      time.Time
	begunAfter int
	// stalled is when the writes to A last made progress, while bytes for A wait
	// (WriteTimeout); stalledOut and stalledAcked were BToA's out and A's acknowledged bytes
	// then (stall_linux.go).
	stalled      time.Time
	stalledOut   int
	stalledAcked uint64
	// replacement is what a Watch's Replace verdict relays (Handle.Replacing).
	replacement []byte
	// On a ring (ring_linux.go): what each socket's receive brought, and whether the pair
	// waits in the turn's list of pairs to settle.
	rq      [2]recvQ
	touched bool
}

// stream is one direction: buf[w:s] is framed and waits to be written to the peer,
// buf[s+gap:r] is read but not framed yet (an incomplete header or watched message).
type stream struct {
	buf     []byte
	w, s, r int
	// gap is what a scan dropped or replaced by less, between the framed bytes and the rest:
	// the messages after it move down once each as they are framed, rather than the whole
	// rest at every message dropped or renamed (a batch of renamed Binds would move it once
	// per Bind). Zero outside scan.
	gap int
	// small is the loop's buffer while a Replace has grown buf beyond it: buf goes back to it
	// once what the larger one holds fits there.
	small   []byte
	skip    int  // bytes of an unwatched message still to come after buf[s:]
	out     int  // bytes written to the peer so far (a write stall's progress: stall_linux.go)
	whole   int  // messages framed whole so far (a count that only tells whether one was)
	blocked bool // the peer's socket would block: waiting until it is writable
	held    bool // a Watch said Hold at buf[s:]: not read until Resume
	unplug  bool // a Watch said Unplug: B leaves once buf[w:s] is written
	// pending ends the pair once buf[w:s] is written (a Watch's Pause or End, or the
	// source closed its end).
	pending *Result
	// inflight is the ring's send of buf[w:...] in flight (blocked meanwhile): the memory
	// the kernel reads, kept referenced until its completion.
	inflight []byte
	// quiet: the send in flight is quiet (Loop.send). short: a quiet send of the stream found
	// its peer's socket short of room; its sends are loud until one completes whole.
	quiet, short bool
	// sndbuf is the send buffer (SO_SNDBUF) of the socket sndbufFD, the one the stream last
	// sent to (stream.roomFor); 0 until read. unconfirmed is what the stream's sends since
	// that socket's send queue was last seen empty may hold of it (each send's bytes and
	// skbOverhead).
	sndbuf, sndbufFD, unconfirmed int
}

func newPair(p Pair, bufs *buffers, bufBytes int) *pair {
	pr := &pair{p: p}
	for d := range pr.st {
		pr.st[d].buf = bufs.get(bufBytes)
		pr.ends[d] = end{p: pr, side: Direction(d)}
	}
	pr.st[AToB].r = copy(pr.st[AToB].buf, p.Ahead)
	return pr
}

func (p *pair) fd(side Direction) int {
	if side == AToB {
		return p.p.A
	}
	return p.p.B
}

// interest is what epoll must report for socket side: readable while its stream may read,
// writable while the other stream waits to write to it.
func (p *pair) interest(side Direction) uint32 {
	var ev uint32
	if p.fd(side) < 0 {
		return 0
	}
	if st := &p.st[side]; !st.blocked && st.pending == nil && !st.held && !st.unplug {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if p.st[1-side].blocked {
		ev |= unix.EPOLLOUT
	}
	return ev
}

func (p *pair) update(l *Loop) {
	for s := range 2 {
		if !p.done && p.fd(Direction(s)) >= 0 {
			l.setInterest(p, Direction(s))
		}
	}
}

// event handles what epoll reported for socket side.
func (p *pair) event(l *Loop, side Direction, ev uint32) {
	other := 1 - side
	if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 && p.st[other].blocked {
		p.flush(l, other)
	}
	if p.done || ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
		return
	}
	if st := &p.st[side]; !st.blocked && st.pending == nil && !st.held && !st.unplug {
		p.pump(l, side)
		return
	}
	if ev&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		// The socket failed while its bytes cannot go anywhere: epoll would report it again
		// and again.
		p.stop(l, Result{Err: ErrClosed, Side: side})
	}
}

// pump reads socket d once, frames what came and writes it to the peer.
func (p *pair) pump(l *Loop, d Direction) {
	st := &p.st[d]
	if st.s > 0 { // buf[w:s] is written (pump runs unblocked)
		st.compact()
	}
	if st.r == len(st.buf) {
		p.stop(l, Result{Err: ErrMessageTooLarge, Side: d})
		return
	}
	n, e := l.readFrom(p, d, st.buf[st.r:])
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		return
	case e != 0:
		p.stop(l, Result{Err: fmt.Errorf("relayloop: read: %w", e), Side: d})
		return
	case n == 0:
		st.r = st.s // an incomplete message at the end is dropped
		st.pending = &Result{Err: ErrClosed, Side: d}
	default:
		st.r += n
		if !p.scan(l, d) {
			return
		}
	}
	p.flush(l, d)
	if !p.done && (st.pending != nil || st.held) {
		p.update(l) // stop reading this side until what is framed is written
	}
}

// scan frames buf[s:r], asking the Watch about watched messages; false when it stopped the
// pair.
func (p *pair) scan(l *Loop, d Direction) bool {
	st := &p.st[d]
	f := p.p.Framing[d]
	if f == nil {
		st.s = st.r
		return true
	}
	defer st.closeGap()
	hl := f.HeaderLen()
	for st.s+st.gap < st.r {
		alone := p.fd(1-d) < 0 // no peer: every message is the Watch's, which must hold it (or Plug one in)
		at := st.s + st.gap    // the next byte to frame
		if st.skip > 0 {
			n := min(st.skip, st.r-at)
			st.frame(n)
			st.skip -= n
			if st.skip == 0 {
				st.whole++
			}
			continue
		}
		if st.r-at < hl {
			return true
		}
		total, watch := f.Frame(st.buf[at:st.r])
		watch = watch || alone
		switch {
		case total < hl:
			p.stop(l, Result{Err: ErrMalformed, Side: d}) // (stop closes the gap)
			return false
		case !watch:
			n := min(total, st.r-at)
			st.frame(n)
			st.skip = total - n
			if st.skip == 0 {
				st.whole++
			}
			continue
		case total > len(st.buf):
			st.pending = &Result{Paused: true, Err: ErrMessageTooLarge, Side: d}
			return true
		case st.r-at < total:
			return true
		}
		v := p.p.Watch(d, st.buf[at:at+total])
		replacement := p.replacement
		p.replacement = nil
		for back := &p.st[BToA]; v == Answer && l.ring != nil && back.w < back.s && !p.mayAnswer(d, len(replacement)); {
			// A ring sends the earlier answers later: the room is known once they are sent,
			// as far as the client takes them (a send that must wait is cancelled).
			if back.inflight == nil {
				l.send(back, p.fd(AToB), false)
			}
			w := back.w
			l.quiesceSend(p, BToA)
			if back.w == w {
				break
			}
		}
		if v == Answer && !p.mayAnswer(d, len(replacement)) {
			v = Pause
		}
		if p.fd(1-d) < 0 && (v == Relay || v == End || v == Unplug || v == Replace) {
			v = Hold
		}
		if v != Pause && v != Hold {
			st.whole++
		}
		switch v {
		case Relay:
			st.frame(total)
		case Drop:
			st.gap += total
		case Pause:
			st.pending = &Result{Paused: true}
			return true
		case End:
			st.frame(total)
			st.pending = &Result{}
			return true
		case Hold:
			st.held = true
			return true
		case Unplug:
			st.frame(total)
			if d == BToA {
				st.unplug = true
			} else {
				st.pending = &Result{}
			}
			return true
		case Replace:
			st.replace(total, replacement)
		case Answer:
			st.gap += total
			if !p.answer(l, replacement) { // (a stop closes the gap)
				return false
			}
		}
	}
	return true
}

// busy reports whether the stream has framed bytes still to write to its peer, a send of
// them in flight, or an end or unplug waiting for them.
func (st *stream) busy() bool {
	return st.w < st.s || st.inflight != nil || st.blocked || st.unplug || st.pending != nil
}

// frame takes the next n unframed bytes as framed, moving them down over the gap.
func (st *stream) frame(n int) {
	if st.gap > 0 {
		copy(st.buf[st.s:], st.buf[st.s+st.gap:st.s+st.gap+n])
	}
	st.s += n
}

// closeGap moves the unframed bytes down to the framed ones.
func (st *stream) closeGap() {
	if st.gap > 0 {
		st.r = st.s + copy(st.buf[st.s:], st.buf[st.s+st.gap:st.r])
		st.gap = 0
	}
}

// mayAnswer reports whether a Watch's Answer of n bytes to a message of direction d can be
// written back: d is A's, no B is plugged in (nothing of B's is on its way to A), and the
// answers A has not read yet leave room for n more.
func (p *pair) mayAnswer(d Direction, n int) bool {
	back := &p.st[BToA]
	room := len(back.buf) - back.s
	if back.w == back.s {
		room = len(back.buf)
	}
	return d == AToB && p.p.B < 0 && n <= room
}

// answer writes m back to A after what it was answered before; false when that stopped the
// pair.
func (p *pair) answer(l *Loop, m []byte) bool {
	back := &p.st[BToA]
	if back.w == back.s {
		back.w, back.s = 0, 0
	}
	back.s += copy(back.buf[back.s:], m)
	back.r = back.s
	if !back.blocked { // else A's socket is watched for room already
		p.flush(l, BToA)
	}
	return !p.done
}

// replace puts m where the message of total bytes at buf[s+gap:] was, as framed. What follows
// stays where it is while m fits in the gap and the message's room; else it moves up, with
// room to spare for the next renames (a name on the engine connection is often a byte longer
// than the client's), or the buffer grows to twice what it must hold, once for a full buffer
// of renamed messages rather than once for each (a copy of the whole buffer each time); it
// shrinks back once written (compact).
func (st *stream) replace(total int, m []byte) {
	room := st.gap + total
	tail := st.s + room // where the unframed rest starts
	if need := len(m) - room; need > 0 {
		rest := st.r - tail
		if end := st.s + len(m) + rest; end > len(st.buf) {
			grown := make([]byte, 2*end)
			copy(grown[st.w:], st.buf[st.w:st.s])
			copy(grown[st.s+len(m):], st.buf[tail:st.r])
			if st.small == nil {
				st.small = st.buf
			}
			st.buf = grown
			copy(st.buf[st.s:], m)
			st.s += len(m)
			st.r = st.s + rest
			st.gap = 0
			return
		}
		up := min(max(need, renameSlack), len(st.buf)-st.r)
		copy(st.buf[tail+up:], st.buf[tail:st.r])
		st.r += up
		room += up
	}
	copy(st.buf[st.s:], m)
	st.s += len(m)
	st.gap = room - len(m)
}

// renameSlack is how far a Replace that does not fit moves the rest up at least: the room
// the next renames of a batch grow into.
const renameSlack = 256

// compact moves what is read but not framed to the front of the buffer once what was framed
// is written; back into the loop's buffer when a Replace grew it and the rest fits there.
func (st *stream) compact() {
	rest := st.buf[st.s:st.r]
	if st.small != nil && len(rest) <= len(st.small) {
		st.buf, st.small = st.small, nil
	}
	st.r = copy(st.buf, rest)
	st.w, st.s = 0, 0
}

// flush writes buf[w:s] of stream d to its peer, as much as the peer's socket takes.
func (p *pair) flush(l *Loop, d Direction) {
	st := &p.st[d]
	for st.w < st.s {
		if l.ring != nil {
			// A send to the ring (one in flight at a time); its completion flushes on.
			if st.inflight == nil {
				l.send(st, p.fd(1-d), p.quietSend(d))
			}
			if !st.blocked {
				st.blocked = true
				p.update(l)
			}
			p.timeDirection(l, d)
			return
		}
		n, e := write(p.fd(1-d), st.buf[st.w:st.s])
		switch {
		case e == unix.EAGAIN:
			if !st.blocked {
				st.blocked = true
				p.update(l)
			}
			p.timeDirection(l, d)
			return
		case e == unix.EINTR:
			continue
		case e != 0:
			p.stop(l, Result{Err: fmt.Errorf("relayloop: write: %w", e), Side: d})
			return
		}
		st.w += n
		st.out += n
	}
	if st.blocked {
		st.blocked = false
		p.update(l)
	}
	if st.small != nil && st.s == st.r {
		st.compact() // nothing waits in the grown buffer: it can go now
	}
	if st.pending != nil && !p.done {
		p.stop(l, *st.pending)
		return
	}
	if st.unplug && !p.done {
		p.unplug(l)
	}
	p.timeDirection(l, d)
}

// timeMessage starts A's message clock when what A sent ends inside a message, and stops it
// when it does not, or when A is not read for now (held, or its peer does not take more).
func (p *pair) timeMessage(l *Loop) {
	if p.p.MessageTimeout <= 0 || p.done {
		return
	}
	st := &p.st[AToB]
	if st.inflight != nil {
		// A ring's send in flight is no sign that the peer takes no more: the clock goes on
		// as it was (expire spares the pair while the send lasts).
		return
	}
	begun := (st.r > st.s || st.skip > 0) && !st.held && !st.blocked && st.pending == nil
	switch {
	case begun && (p.begun.IsZero() || p.begunAfter != st.whole):
		p.begun, p.begunAfter = time.Now(), st.whole
		l.begun[p] = struct{}{}
	case !begun && !p.begun.IsZero():
		p.begun = time.Time{}
		delete(l.begun, p)
	}
}

// unplug takes B out of the pair once what it sent up to the unplugging message is written.
func (p *pair) unplug(l *Loop) {
	if a := &p.st[AToB]; a.w < a.s || a.skip > 0 {
		p.stop(l, Result{Err: ErrUnplugBusy, Side: BToA})
		return
	}
	fd := p.p.B
	if l.ring != nil {
		l.quiesce(p, int(BToA)) // B's receive ends here; what it brought is rest
	}
	if l.ring != nil && p.p.KeepB || l.ring == nil && p.p.KeepB && p.cur[BToA] == idleInterest {
		// On a ring nothing runs for B once quiesced: kept, it is only known non-blocking.
		kept.Lock()
		kept.m.set(fd, l)
		kept.Unlock()
	} else if l.ring == nil {
		_ = l.ctl(unix.EPOLL_CTL_DEL, fd, 0)
	}
	l.ends.del(fd)
	st := &p.st[BToA]
	var rest []byte
	if st.r > st.s {
		rest = append([]byte(nil), st.buf[st.s:st.r]...)
	}
	if l.ring != nil && p.rq[BToA].waiting() {
		rest = l.drain(p, BToA, rest)
	}
	p.rq[BToA].reset()
	buf := st.buf
	if st.small != nil {
		buf = st.small
	}
	*st = stream{buf: buf}
	a := &p.st[AToB]
	a.blocked = false
	p.p.B = -1
	p.cur[BToA] = 0
	if p.p.Unplugged != nil {
		p.p.Unplugged(fd, rest)
	}
	if !p.done {
		p.update(l)
	}
}

// resume plugs b in when the pair has no B (b >= 0), and frames again what A's Watch held.
func (p *pair) resume(l *Loop, b int) {
	if p.done {
		return
	}
	if b >= 0 && p.p.B < 0 {
		if err := p.plug(l, b); err != nil {
			p.stop(l, Result{Err: err, Side: BToA})
			return
		}
	}
	st := &p.st[AToB]
	if !st.held {
		p.update(l)
		return
	}
	st.held = false
	if !p.scan(l, AToB) {
		return
	}
	p.flush(l, AToB)
	if !p.done {
		p.update(l)
	}
}

// plug makes b the pair's B and watches it; on failure nothing is plugged in.
func (p *pair) plug(l *Loop, b int) error {
	if p.done || p.p.B >= 0 {
		return errors.New("relayloop: plug into a pair that is done or has a B")
	}
	p.p.B = b
	if l.ring != nil {
		unkeep(b)
		l.ends.set(b, &p.ends[BToA])
		p.rq[BToA].asked = true
		l.touch(p) // settle arms its receive
		return nil
	}
	p.cur[BToA] = p.interest(BToA)
	if err := l.add(b, p.cur[BToA]); err != nil {
		p.p.B, p.cur[BToA] = -1, 0
		return fmt.Errorf("relayloop: epoll_ctl add %d: %w", b, err)
	}
	l.ends.set(b, &p.ends[BToA])
	return nil
}

// stop ends the pair once: its sockets leave the loop, then Done says how it ended.
// (Leftover[BToA] is empty when no B is plugged in.)
func (p *pair) stop(l *Loop, res Result) {
	if p.done {
		return
	}
	p.done = true
	if l.ring != nil && p.registered {
		l.quiesce(p, -1) // the sockets' receives end, sends in flight end or are cancelled
	}
	l.forget(p)
	l.stopped = append(l.stopped, p)
	res.B = p.p.B
	for d := range p.st {
		st := &p.st[d]
		st.closeGap()
		if st.r > st.w {
			res.Leftover[d] = append([]byte(nil), st.buf[st.w:st.r]...)
		}
		if l.ring != nil && p.rq[d].waiting() {
			res.Leftover[d] = l.drain(p, Direction(d), res.Leftover[d])
		}
		res.Scanned[d] = st.s - st.w
		res.Remaining[d] = st.skip
	}
	if p.p.Done != nil {
		p.p.Done(res)
	}
}

// finish reports a pair that never started (its loop was closed).
func (p *pair) finish(res Result) {
	p.done = true
	res.B = p.p.B
	if p.p.Done != nil {
		p.p.Done(res)
	}
}

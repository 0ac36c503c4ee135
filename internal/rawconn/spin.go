package rawconn

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Spinning (off unless SpinEnv sets it). A server that answers one request at a time sleeps
// twice per statement: awaiting the client's next request, and awaiting the engine's answer to
// the query it sent. A sleep that leaves its CPU idle ends in a wake-up of that CPU, which in a
// virtual machine whose guest halts at once when idle (no halt-polling) is dear. A read that
// awaits the answer to its connection's own last write may therefore poll the socket for a
// short while (SetSpin) before it waits in the poller: an answer that comes within that while
// is read on a thread that never slept.
//
// Bounds: one read in the process spins at a time, and only while it is the only read awaiting
// an answer (spinWaiters): with two or more the process has other work, and its threads no idle
// time to give. A connection whose last answer took longer than the bound does not spin for the
// next (a client that thinks between requests, a long query), until an answer comes within the
// bound again, as the guest's own halt-polling adapts. While it spins the goroutine keeps its
// thread (a yield to the scheduler wakes an idle thread to take the work over: RESULTS.md,
// session 27).
//
// Measured under load it gained nothing and cost CPU (RESULTS.md, "Trino HTTP SELECT 1: a
// spinning wait ... (session 27)"): a busy machine's CPUs are seldom idle, and a woken peer
// preempts the writer on its own CPU. What it saves at rest is measured by bench-proxy's
// trino-spin row.

// SpinEnv names the environment variable that sets the bound, in microseconds, for the
// connections of the Trino port and of pgengine's pool (Spin); 0: no spinning; unset:
// spinDefault.
const SpinEnv = "QUERYFLUX_SPIN_MICROS"

// spinDefault is the bound when SpinEnv is unset: spinning is on by default, but only while
// the machine has idle CPU (machineIdle), where it measured 115 -> 72 us added p50 on the
// Trino port at rest (RESULTS.md, end of session 27).
const spinDefault = 200 * time.Microsecond

// spinMax bounds SpinEnv's value.
const spinMax = 10 * time.Millisecond

// Spin is the bound SpinEnv sets: spinDefault when unset, 0 when 0 or invalid.
func Spin() time.Duration {
	v, set := os.LookupEnv(SpinEnv)
	if !set {
		return spinDefault
	}
	us, err := strconv.Atoi(v)
	if err != nil || us <= 0 {
		return 0
	}
	return min(time.Duration(us)*time.Microsecond, spinMax)
}

// spinWaiters counts the reads, over every connection of the process, that await an answer to
// their connection's last write, found the socket empty, and whose last answer came within the
// bound (a connection idle between a slow client's requests does not count).
var spinWaiters atomic.Int32

// What became of the reads that awaited an answer and found the socket empty (SpinCounts).
var (
	spun         atomic.Uint64 // answered while spinning
	spunWaited   atomic.Uint64 // spun to the bound, or until another read awaited an answer, then waited
	notIdle      atomic.Uint64 // waited without spinning: the machine had no idle CPU at the last sample
	slowPeerWait atomic.Uint64 // waited without spinning: the connection's last answer took longer than the bound
)

// SpinCounts are what became of the reads of spinning connections (SetSpin) that awaited an
// answer and found the socket empty, over the process's life: whether the spin was on for
// them, and what it saved. A server whose spin is on by default tells from them whether it
// spun at all on a given machine and load.
type SpinCounts struct {
	Answered uint64 // read while spinning: the thread never slept
	Waited   uint64 // spun, nothing came within the bound (or another read came to await one), then slept
	NotIdle  uint64 // slept at once: the machine's CPUs were not idle enough to spin on
	SlowPeer uint64 // slept at once: the connection's last answer came later than the bound
}

// Spins returns the counts so far.
func Spins() SpinCounts {
	return SpinCounts{Answered: spun.Load(), Waited: spunWaited.Load(), NotIdle: notIdle.Load(), SlowPeer: slowPeerWait.Load()}
}

// SetSpin makes a read that awaits the answer to c's last write poll the socket for up to d
// before it waits in the poller (0: never). Call it before c is used.
func (c *Conn) SetSpin(d time.Duration) {
	c.spin = d
}

// spinRead is called for a read awaiting an answer that found the socket empty: it marks the
// read waiting and, when the bounds allow, polls the socket for up to c.spin. EAGAIN: nothing
// came, wait in the poller.
func (c *Conn) spinRead(fd uintptr) (uintptr, syscall.Errno) {
	c.waiting = true
	c.waitStart = time.Now()
	if c.lastWait > c.spin {
		slowPeerWait.Add(1)
		return 0, syscall.EAGAIN // a slow peer: it neither spins nor counts
	}
	if !askIdle(c.waitStart) {
		notIdle.Add(1)
		return 0, syscall.EAGAIN // no idle CPU to spin on: the poll would take one from other work
	}
	c.counted = true
	spinWaiters.Add(1)
	for spinWaiters.Load() == 1 && time.Since(c.waitStart) <= c.spin {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		if e != syscall.EAGAIN {
			spun.Add(1)
			c.spinEnded()
			return r, e
		}
	}
	spunWaited.Add(1)
	c.spinEnded()
	return 0, syscall.EAGAIN
}

// spinEnded counts the time a read spun, at most its bound, as idle in the idle sampler's
// next sample (spunNanos), as an event loop's spin counts (EndSpin): its CPU would have halted
// without it. Counted busy, a daemon spinning through both waits of every statement (the
// client's next request, the engine's answer) keeps one of two CPUs busy by itself, and with
// its client and engine on the other the machine read under a quarter idle: at rest a third
// of its waits slept at once for want of an idle CPU (RESULTS.md, end of session 35: 37,988
// not idle against 76,960 answered while spinning).
func (c *Conn) spinEnded() {
	spunNanos.Add(int64(min(time.Since(c.waitStart), c.spin)))
}

// readEnded ends a read's wait, if it waited: it no longer counts, and how long it waited
// decides whether the next one spins.
func (c *Conn) readEnded() {
	if c.waiting {
		c.waiting = false
		c.lastWait = time.Since(c.waitStart)
		if c.counted {
			c.counted = false
			spinWaiters.Add(-1)
		}
	}
	if c.spin > 0 {
		c.wrote.Store(false)
	}
}

// BeginSpin reports whether a waiter outside this package (an event loop's thread, which
// polls its own sockets) may spin now, under the same bounds as a spinning read: the machine
// had idle CPU at the last sample, and nothing else in the process awaits an answer. True
// counts the caller as such a waiter until EndSpin; while it spins it checks SpinAlone.
func BeginSpin(now time.Time) bool {
	if !askIdle(now) {
		return false
	}
	if spinWaiters.Add(1) != 1 {
		spinWaiters.Add(-1)
		return false
	}
	spinBegan.Store(int64(now.Sub(epoch)))
	return true
}

// MachineIdle reports whether the machine had idle CPU at the last sample (BeginSpin's first
// bound): a waiter that sleeps at once where it may not spin asks before it commits to a sleep.
func MachineIdle(now time.Time) bool { return askIdle(now) }

// EndSpin ends what a true BeginSpin began. The time spun counts as idle in the idle
// sampler's next sample (spunNanos).
func EndSpin() {
	spunNanos.Add(int64(time.Since(epoch)) - spinBegan.Load())
	spinWaiters.Add(-1)
}

// spinBegan is when the spin of the caller of a true BeginSpin began, since epoch (one spins
// at a time).
var spinBegan atomic.Int64

// SpinAlone reports whether a spinner that began is still the only waiter.
func SpinAlone() bool { return spinWaiters.Load() == 1 }

// HoldIdle makes the idle sampler's answer idle until release is called (tests of spinners
// outside this package: their machine's load must not decide whether they spin).
func HoldIdle(idle bool) (release func()) {
	idleHeld.Store(true)
	machineIdle.Store(idle)
	return func() { idleHeld.Store(false) }
}

package relayloop

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// Raw waits. The loop's goroutine is locked to its thread and goes from one wait in the kernel
// to the next without passing through Go's scheduler, so its processor's scheduling tick never
// changes. Go's system monitor (sysmon) takes a processor whose tick is 10 ms stale when it finds
// it in a system call the runtime knows of, and after taking one it polls every 20 us again:
// 9-13 % of a passthrough daemon's CPU under pgbench (RESULTS.md, #22). A wait made as a raw
// system call leaves the processor running as far as the runtime knows: there is nothing to
// take, and the monitor backs off to its 10 ms tick. It still preempts the loop once its tick
// is stale (a signal, which ends the wait early: EINTR), which passes the loop through the
// scheduler and renews the tick: one hand-off of the thread per ~10 ms in place of a takeover
// per monitor tick.
//
// A raw wait holds its processor, so it is taken only where that is cheap:
//   - while the loop is busy: its last wait ended within rawBound. An idle loop's first wait
//     times out at rawBound and its next waits are the runtime's, so a daemon at rest wakes no
//     more often than before and the monitor sleeps deeply again;
//   - bounded by rawBound, so that a stop of the world (a garbage collection) that cannot
//     signal the thread (GODEBUG=asyncpreemptoff=1) waits at most that long;
//   - by at most GOMAXPROCS-1 loops of the process at once (rawWaiters), so that a processor
//     is always there for the daemon's other goroutines, and never with GOMAXPROCS 1.
type rawWaiter struct {
	bound time.Duration // 0: never wait raw
	short bool          // the loop's last wait ended within bound
	turns int           // waits since maxRaw was last read
	max   int32         // the process's GOMAXPROCS-1 as last read

	raws     atomic.Int64 // raw waits begun (tests)
	lapsed   atomic.Int64 // raw waits that ended at their bound with nothing (tests)
	blocking atomic.Int64 // waits made the runtime's way after the spin (tests)
}

// rawBoundDefault bounds a raw wait, and a wait shorter than it keeps the next one raw. Under
// load a loop's waits last tens to hundreds of microseconds (a client's next statement, the
// engine's answer); a loop with nothing to do for 2 ms is at rest.
const rawBoundDefault = 2 * time.Millisecond

// RawWaitEnv names the environment variable that sets the raw waits' bound in microseconds
// (0: no raw waits; unset: rawBoundDefault), for comparisons.
const RawWaitEnv = "QUERYFLUX_RELAY_RAWWAIT_MICROS"

// rawBound is the bound a new loop's raw waits get (tests change it).
var rawBound = rawBoundFromEnv()

func rawBoundFromEnv() time.Duration {
	v, ok := os.LookupEnv(RawWaitEnv)
	if !ok {
		return rawBoundDefault
	}
	us, err := strconv.Atoi(v)
	if err != nil || us < 0 {
		slog.Default().Warn("relayloop: not a number of microseconds >= 0; raw waits keep their default bound", "env", RawWaitEnv, "value", v, "bound", rawBoundDefault)
		return rawBoundDefault
	}
	return time.Duration(us) * time.Microsecond
}

// rawWaiters counts the process's loops in a raw wait now.
var rawWaiters atomic.Int32

// maxRawEvery is how many waits a loop makes between reads of GOMAXPROCS (which takes the
// scheduler's lock; it changes seldom, and a stale value errs for those waits alone).
const maxRawEvery = 4096

// begin reports whether the wait now beginning may be raw, and if so counts it among
// rawWaiters: the caller then calls end.
func (w *rawWaiter) begin() bool {
	if w.bound == 0 || !w.short {
		w.blocking.Add(1)
		return false
	}
	if w.turns == 0 {
		w.max = int32(runtime.GOMAXPROCS(0) - 1)
	}
	w.turns = (w.turns + 1) % maxRawEvery
	if rawWaiters.Add(1) > w.max {
		rawWaiters.Add(-1)
		w.blocking.Add(1)
		return false
	}
	w.raws.Add(1)
	return true
}

// end ends a raw wait (begin true) that found news (got) or lapsed at its bound.
func (w *rawWaiter) end(got bool) {
	rawWaiters.Add(-1)
	if !got {
		w.lapsed.Add(1)
		w.short = false
	}
}

// from is when a wait the runtime's way begins: start when the spinner read it, else now (no
// clock read when raw waits are off).
func (w *rawWaiter) from(start time.Time) time.Time {
	if start.IsZero() && w.bound != 0 {
		return time.Now()
	}
	return start
}

// slept records the length of a wait begun at t (from) that slept the runtime's way.
func (w *rawWaiter) slept(t time.Time) {
	if w.bound != 0 {
		w.short = time.Since(t) < w.bound
	}
}

// boundMillis is the bound as epoll_wait's timeout, at most limit (>= 0) when one is set.
func (w *rawWaiter) boundMillis(limit int) int {
	ms := int((w.bound + time.Millisecond - 1) / time.Millisecond)
	if limit >= 0 {
		ms = min(ms, limit)
	}
	return ms
}

// boundFor is the bound of a ring's raw wait, at most limit milliseconds when one is set.
func (w *rawWaiter) boundFor(limitMillis int) time.Duration {
	if limitMillis >= 0 {
		return min(w.bound, time.Duration(limitMillis)*time.Millisecond)
	}
	return w.bound
}

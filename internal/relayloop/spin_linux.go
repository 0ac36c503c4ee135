package relayloop

import (
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/rawconn"
)

// Spinning before sleeping. A loop relaying one client's statements at a time sleeps twice
// per statement: awaiting the engine's answer, and awaiting the client's next statement. Each
// sleep that leaves its CPU idle ends in a wake-up of that CPU, dear in a virtual machine whose
// guest halts at once when idle. So a loop may poll its sockets for a short while (the bound)
// before it sleeps: what comes within the bound is taken on a thread that never slept.
//
// It spins under rawconn's bounds (rawconn.BeginSpin): only while the machine has idle CPU
// (under load the spin would take a CPU from the peers it waits for, and a loop with many
// clients seldom waits anyway), and only while nothing else in the process awaits an answer.
// And only when its last wait ended within the bound, as a guest's halt-polling adapts: a
// daemon at rest, whose waits are long, sleeps at once and wakes no more often than before.
type spinner struct {
	bound    time.Duration // 0: never spin
	lastWait time.Duration // how long the loop's last wait took, spinning or sleeping
	waits    atomic.Int64  // waits begun: the loop found nothing to do (tests)
	spins    atomic.Int64  // waits that spun (tests)
	spun     atomic.Int64  // waits a spin ended (tests)
}

// begin is the time a wait begins, read only when the loop may spin (a wait's length decides
// the next spin).
func (s *spinner) begin() time.Time {
	s.waits.Add(1)
	if s.bound == 0 {
		return time.Time{}
	}
	return time.Now()
}

// try polls with poll until poll finds something (true) or the bound passes, when the bounds
// allow a spin at all. start is the wait's begin.
func (s *spinner) try(start time.Time, poll func() bool) bool {
	if s.bound == 0 || s.lastWait > s.bound || !rawconn.BeginSpin(start) {
		return false
	}
	defer rawconn.EndSpin()
	s.spins.Add(1)
	for rawconn.SpinAlone() {
		if poll() {
			s.spun.Add(1)
			s.lastWait = time.Since(start)
			return true
		}
		if time.Since(start) > s.bound {
			break
		}
	}
	return false
}

// mightSpin reports whether a wait beginning now may spin: the bounds try checks first, the
// process's other waiters aside.
func (s *spinner) mightSpin() bool {
	return s.bound != 0 && s.lastWait <= s.bound && rawconn.MachineIdle(time.Now())
}

// end records the length of a wait that began at start and ended in a sleep.
func (s *spinner) end(start time.Time) {
	if s.bound != 0 {
		s.lastWait = time.Since(start)
	}
}

// Package gcfloor gives the garbage collector a floor of headroom: after every cycle it sets
// GOGC so that the next cycle starts once at least Floor bytes more are allocated, or later
// where GOGC would have it later (a live heap larger than Floor leaves GOGC as it is).
//
// The simulator's: a simulated fleet's live heap is small next to what it allocates
// (a 1,000-worker plan-fleet run keeps about 35 MB and allocates 165 MB), so at GOGC=100 the
// collector marks that heap and every task's stack again each 35 MB, and six times while it
// grows at boot; a 10,000-worker fleet's live heap is larger than the floor and keeps GOGC=100,
// and with it its peak memory. And the daemon's (queryflux serve): a proxy's live heap is a
// few MB next to what its statements allocate.
//
// It touches nothing outside the runtime's GC settings, and never the simulation.
//
// determinism: outside the simulator (the host processes: qfsim, its benchmark and queryflux serve start it; no role calls it)
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Start keeps the headroom floor (bytes) from now until stop is called, which puts GOGC back.
// With GOGC off (or below 0) it does nothing.
func Start(floor uint64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 || floor == 0 {
		return func() {}
	}
	t := &tuner{base: base, floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
	return func() {
		t.mu.Lock()
		t.stopped = true
		t.mu.Unlock()
		debug.SetGCPercent(base)
	}
}

type tuner struct {
	base   int
	floor  uint64
	sample []metrics.Sample

	mu      sync.Mutex
	stopped bool
}

// arm sets tune to run after the next cycle: a finalizer on an object nothing holds runs once
// that cycle has found it unreachable, and arms the next.
func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if t.tune() {
			t.arm()
		}
	})
}

type sentinel struct{ _ [16]byte } // not tiny-allocated: the tiny allocator batches finalizers

// tune sets GOGC for the live heap the last cycle found; false once stopped.
func (t *tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	debug.SetGCPercent(Percent(t.base, t.floor, t.sample[0].Value.Uint64()))
	return true
}

// Percent is the GOGC that starts the next cycle after max(live*base/100, floor) more bytes.
// Before the first cycle (live 0) the runtime reckons with a 4 MB heap.
func Percent(base int, floor, live uint64) int {
	if live == 0 {
		live = 4 << 20
	}
	if uint64(base)*live/100 >= floor {
		return base
	}
	return int((floor*100 + live - 1) / live)
}

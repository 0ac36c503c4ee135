package sim

import (
	"testing"
	"time"
)

// TestTimerHeapCompactsToEmpty: removing every timer of a heap of many (a task that arms and
// cancels hundreds of timeouts while nothing else waits) compacts it to nothing, and the heap
// takes timers again: a compaction that left no entry used to sink an entry of an empty heap.
func TestTimerHeapCompactsToEmpty(t *testing.T) {
	var h timerHeap
	var seq uint64
	for round := range 2 {
		var tms []*timer
		for i := range 65 { // the 65th removal compacts: nothing is left
			seq++
			tm := &timer{at: time.Duration(i), seq: seq}
			h.push(tm)
			tms = append(tms, tm)
		}
		for _, tm := range tms {
			h.remove(tm)
		}
		if e := h.first(); e != nil || h.len() != 0 {
			t.Fatalf("round %d: every timer removed, the heap holds %d entries (first %v)", round, h.len(), e)
		}
	}
}

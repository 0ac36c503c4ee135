// Package hugeheap asks the kernel to back the Go heap with transparent huge pages, so that
// memory the process touches for the first time costs one page fault per 2 MB instead of one
// per 4 KB page.
//
// It is for the simulator: a simulated fleet touches its heap and its tasks' goroutine stacks
// for the first time as it boots (a 1,000-worker plan-fleet run, about 31,000 page faults), and
// each fault is a trap into the kernel on the runner's thread, which on a virtual machine costs
// about 8 us. The runtime does not ask for huge pages itself, and a kernel whose setting is
// "madvise" (a common default) gives them only to memory advised MADV_HUGEPAGE.
//
// Reserve allocates byte slices (the runtime maps fresh pages for them and does not touch them),
// advises their range MADV_HUGEPAGE, and lets them go, collecting them and handing their pages
// back to the kernel at once (the runtime counts none of them as memory it holds): the runtime then
// carves its later spans, objects and goroutine stacks alike, out of those pages, lowest
// addresses first. The advice stays with the range for the life of the process. Where the
// kernel's setting is "never", nothing changes but the collection; where the system is not
// Linux, nothing at all.
//
// It touches the process's own memory advice and the runtime's collector, never the simulation.
//
// determinism: outside the simulator (the simulator's host process: qfsim and its benchmark call it; no role does)
package hugeheap

import (
	"runtime"
	"runtime/debug"
	"slices"
	"unsafe"
)

// Reserve advises the heap's next n bytes for huge pages, and reports how many bytes it advised.
// It takes at most an eighth of the machine's memory, and nothing where the kernel counts every
// mapping against a commit limit (a mapping the kernel refuses ends the process). Call it first
// thing in main: a slice that starts in pages the heap has used and
// freed is zeroed whole, touching every page of it; the slices are small, so that the few the
// heap's free pages take cost little.
func Reserve(n int) int {
	n = int(min(uint64(n), reservable()))
	if n < chunk {
		return 0
	}
	held := make([][]byte, 0, n/chunk)
	for range n / chunk {
		held = append(held, make([]byte, chunk))
	}
	advised := adviseRuns(held)
	runtime.KeepAlive(held)
	held = nil
	// The slices were allocated live: collect them now, or the next cycles would reckon their
	// goal with them and let the heap grow by n before collecting again; and hand their pages
	// back (never touched, they cost nothing to drop), or the runtime would count them as memory
	// it holds until its scavenger got to them. The advice stays with the range.
	debug.FreeOSMemory()
	return advised
}

// chunk is the size of each slice Reserve allocates: the runtime grows its heap in 4 MB steps.
const chunk = 4 << 20

// hugePage is the size of a transparent huge page on the systems Reserve asks.
const hugePage = 2 << 20

// adviseRuns advises the whole huge pages inside each run of adjacent slices (all of them
// chunk bytes long) and returns their size in bytes.
func adviseRuns(held [][]byte) int {
	starts := make([]uintptr, len(held))
	for i, b := range held {
		starts[i] = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	}
	slices.Sort(starts)
	advised := 0
	for i := 0; i < len(starts); {
		lo, hi := starts[i], starts[i]+chunk
		for i++; i < len(starts) && starts[i] == hi; i++ {
			hi += chunk
		}
		lo = (lo + hugePage - 1) &^ (hugePage - 1)
		hi &^= hugePage - 1
		if hi > lo && advise(lo, hi-lo) {
			advised += int(hi - lo)
		}
	}
	return advised
}

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
// Prefault then keeps the reserved range resident ahead of the heap from a thread of its own:
// the kernel zeroes each huge page when it is first touched (about 0.25 ms per 2 MB here), and
// without it that zeroing happened on the simulator's thread as its heap grew into the range.
//
// It touches the process's own memory advice and the runtime's collector, never the simulation.
//
// determinism: outside the simulator (the simulator's host process: qfsim and its benchmark call it; no role does)
package hugeheap

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
	advised, ranges := adviseRuns(held)
	runtime.KeepAlive(held)
	held = nil
	// The slices were allocated live: collect them now, or the next cycles would reckon their
	// goal with them and let the heap grow by n before collecting again; and hand their pages
	// back (never touched, they cost nothing to drop), or the runtime would count them as memory
	// it holds until its scavenger got to them. The advice stays with the range.
	debug.FreeOSMemory()
	last.Lock()
	last.ranges, last.released = ranges, heapReleased()
	last.Unlock()
	return advised
}

// last is what the last Reserve advised, for Prefault: the ranges, in address order, and the
// heap's released bytes right after it (the runtime counts the reserved pages as released
// until it carves spans out of them).
var last struct {
	sync.Mutex
	ranges   [][2]uintptr
	released uint64
}

func heapReleased() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// chunk is the size of each slice Reserve allocates: the runtime grows its heap in 4 MB steps.
const chunk = 4 << 20

// hugePage is the size of a transparent huge page on the systems Reserve asks.
const hugePage = 2 << 20

// adviseRuns advises the whole huge pages inside each run of adjacent slices (all of them
// chunk bytes long) and returns their size in bytes and the ranges advised, in address order.
func adviseRuns(held [][]byte) (int, [][2]uintptr) {
	starts := make([]uintptr, len(held))
	for i, b := range held {
		starts[i] = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	}
	slices.Sort(starts)
	advised := 0
	var ranges [][2]uintptr
	for i := 0; i < len(starts); {
		lo, hi := starts[i], starts[i]+chunk
		for i++; i < len(starts) && starts[i] == hi; i++ {
			hi += chunk
		}
		lo = (lo + hugePage - 1) &^ (hugePage - 1)
		hi &^= hugePage - 1
		if hi > lo && advise(lo, hi-lo) {
			advised += int(hi - lo)
			ranges = append(ranges, [2]uintptr{lo, hi})
		}
	}
	return advised, ranges
}

// Prefaulter keeps the range the last Reserve advised resident ahead of the heap (Prefault).
type Prefaulter struct {
	stop      atomic.Bool
	populated atomic.Uint64 // bytes of the range made resident, lowest addresses first
	done      chan struct{}
}

// Prefault starts a thread that keeps the range the last Reserve advised resident ahead of the
// heap: whenever fewer than ahead bytes above what the heap has taken of the range are
// resident, it asks the kernel to populate the next ones (MADV_POPULATE_WRITE: the kernel
// zeroes the huge pages there, and leaves alone any page already present), lowest addresses
// first, as the runtime carves its spans and stacks. The page faults and the zeroing the heap's
// growth would cost the thread that allocates happen on this one instead, beside it on a
// machine with a core to spare; the process holds at most ahead bytes more than its heap needs.
// What the heap has taken is what the runtime no longer counts as released since Reserve.
// Nil (nothing started) where Reserve advised nothing or ahead is not positive; the thread ends
// at once where the kernel cannot populate (before Linux 5.14), and once the range is resident.
func Prefault(ahead int) *Prefaulter {
	last.Lock()
	ranges, released := slices.Clone(last.ranges), last.released
	last.Unlock()
	if len(ranges) == 0 || ahead <= 0 {
		return nil
	}
	p := &Prefaulter{done: make(chan struct{})}
	go p.run(ranges, uint64(ahead), released)
	return p
}

// Stop ends the thread and waits for it.
func (p *Prefaulter) Stop() {
	if p == nil {
		return
	}
	p.stop.Store(true)
	<-p.done
}

// Populated is how many bytes of the range the thread has made resident so far.
func (p *Prefaulter) Populated() uint64 {
	if p == nil {
		return 0
	}
	return p.populated.Load()
}

// Done is closed once the thread has ended.
func (p *Prefaulter) Done() <-chan struct{} { return p.done }

// step is how much the thread populates at a time: two huge pages, about half a millisecond.
const step = 2 * hugePage

// Between looks at the heap, the thread sleeps at least minNap, twice as long each time it finds
// nothing to do up to maxNap: 32 MB ahead outruns a heap that grows by less than 1.6 GB/s.
const (
	minNap = time.Millisecond
	maxNap = 20 * time.Millisecond
)

func (p *Prefaulter) run(ranges [][2]uintptr, ahead, released0 uint64) {
	defer close(p.done)
	var total uint64
	for _, r := range ranges {
		total += uint64(r[1] - r[0])
	}
	released := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	var done, taken uint64
	i, at := 0, ranges[0][0] // the next byte to populate
	nap := minNap
	for done < total && !p.stop.Load() {
		metrics.Read(released)
		if r := released[0].Value.Uint64(); r < released0 {
			taken = max(taken, released0-r)
		}
		if done >= taken+ahead {
			time.Sleep(nap)
			nap = min(2*nap, maxNap)
			continue
		}
		nap = minNap
		n := min(step, ranges[i][1]-at)
		if !populate(at, n) {
			return
		}
		done += uint64(n)
		p.populated.Store(done)
		if at += n; at == ranges[i][1] && i+1 < len(ranges) {
			i++
			at = ranges[i][0]
		}
	}
}

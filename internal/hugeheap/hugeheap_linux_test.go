package hugeheap

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// Reserve, called when the heap's top pages were used and freed, touches few pages; it advises a
// range of the heap for huge pages, leaves the heap's goal as it was, and the heap's next objects
// come from the range.
func TestReserveAdvisesWhereTheHeapGrowsNext(t *testing.T) {
	used := make([]byte, 8<<20)
	for i := range used {
		used[i] = 1
	}
	used = nil
	runtime.GC()

	const n = 64 << 20
	faults := minorFaults(t)
	got := Reserve(n)
	if faults = minorFaults(t) - faults; faults > n/4096/4 {
		t.Errorf("Reserve(%d MB) took %d page faults, want few: it touched the pages it advises", n>>20, faults)
	}
	if got < n*3/4 || got > n {
		t.Fatalf("Reserve(%d MB) advised %d bytes, want the huge pages inside it", n>>20, got)
	}
	heap := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(heap)
	if g := heap[0].Value.Uint64(); g >= n {
		t.Errorf("the heap's goal is %d MB after Reserve, want it to leave the reserved slices out", g>>20)
	}
	if f := heap[1].Value.Uint64(); f >= n/2 {
		t.Errorf("the runtime keeps %d MB of free heap from the OS after Reserve, want the slices' pages handed back", f>>20)
	}
	ranges := advisedRanges(t)
	var total uintptr
	for _, r := range ranges {
		total += r[1] - r[0]
	}
	if total < uintptr(got) {
		t.Fatalf("the process has %d bytes advised for huge pages (%x), want >= %d", total, ranges, got)
	}
	// Objects allocated now land in the range once the freed pages below it are taken.
	in := 0
	var keep [][]byte
	for range 48 {
		b := make([]byte, 1<<20)
		keep = append(keep, b)
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		for _, r := range ranges {
			if p >= r[0] && p < r[1] {
				in++
				break
			}
		}
	}
	if in < len(keep)/2 {
		t.Errorf("%d of %d new objects are in the advised range, want most", in, len(keep))
	}
}

// minorFaults is the process's minor page faults so far.
func minorFaults(t *testing.T) int {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return int(ru.Minflt)
}

// advisedRanges lists the process's mappings advised MADV_HUGEPAGE (VmFlags "hg" in smaps).
func advisedRanges(t *testing.T) [][2]uintptr {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps to read: %v", err)
	}
	defer f.Close()
	var out [][2]uintptr
	var cur [2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if strings.Contains(" "+flags+" ", " hg ") {
				out = append(out, cur)
			}
			continue
		}
		// A mapping's first line starts "lo-hi"; its other lines start with a "Name:".
		if first, _, _ := strings.Cut(line, " "); !strings.HasSuffix(first, ":") {
			if _, err := fmt.Sscanf(first, "%x-%x", &cur[0], &cur[1]); err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLimitIsNothingUnderStrictOvercommit(t *testing.T) {
	const gb = 1 << 30
	for _, c := range []struct {
		mode string
		want uint64
	}{{"0\n", 2 * gb}, {"1\n", 2 * gb}, {"2\n", 0}} {
		if got := limit(c.mode, 16*gb); got != c.want {
			t.Errorf("limit(%q, 16 GB) = %d, want %d", c.mode, got, c.want)
		}
	}
}

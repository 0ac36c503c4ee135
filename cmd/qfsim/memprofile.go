package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// peakHeapProfile watches a run's memory every 100 ms of wall time (a run's memory is gone by
// the time it returns, and its peak is what a fleet's size is bounded by). It keeps the heap
// profile taken when the live heap was largest, and the breakdown of the runtime's memory when
// that was largest: the peak RSS, class by class.
type peakHeapProfile struct {
	stop   chan struct{}
	done   chan struct{}
	peak   uint64 // live heap bytes
	stacks uint64 // goroutine stack bytes at their peak
	gs     uint64 // goroutines at their peak
	prof   bytes.Buffer
	mem    memoryBreakdown // at the largest resident total
}

// The metrics a sample reads; memClasses names the breakdown's classes in the same order.
var sampleNames = []string{
	"/gc/heap/live:bytes",
	"/sched/goroutines:goroutines",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
}

const (
	sLive = iota
	sGoroutines
	sTotal
	sReleased
	sObjects
	sStacks
	sOSStacks
	sFree
	sUnused
	sMetaFirst // the metadata classes, through sMetaLast
	sMetaLast  = sMetaFirst + 4
	sOther     = sMetaLast + 1
	sBuckets   = sOther + 1
)

// memoryBreakdown is the memory the Go runtime holds from the OS (mapped and not released:
// about the resident set), class by class, at one moment.
type memoryBreakdown struct {
	resident uint64
	live     uint64 // live heap as the last GC marked it (part of objects)
	objects  uint64 // heap objects, live and garbage not yet collected
	stacks   uint64 // goroutine stacks
	free     uint64 // heap pages free but kept from the OS
	unused   uint64 // room in heap spans not holding objects
	metadata uint64 // the runtime's spans, caches and GC metadata
	other    uint64 // profiling buckets, trace buffers, the rest
}

func breakdownOf(v []metrics.Sample) memoryBreakdown {
	u := func(i int) uint64 { return v[i].Value.Uint64() }
	b := memoryBreakdown{
		resident: u(sTotal) - u(sReleased),
		live:     u(sLive),
		objects:  u(sObjects),
		stacks:   u(sStacks) + u(sOSStacks),
		free:     u(sFree),
		unused:   u(sUnused),
		other:    u(sOther) + u(sBuckets),
	}
	for i := sMetaFirst; i <= sMetaLast; i++ {
		b.metadata += u(i)
	}
	return b
}

func startPeakHeapProfile() *peakHeapProfile {
	p := &peakHeapProfile{stop: make(chan struct{}), done: make(chan struct{})}
	go p.watch()
	return p
}

func (p *peakHeapProfile) watch() {
	defer close(p.done)
	sample := make([]metrics.Sample, len(sampleNames))
	for i, name := range sampleNames {
		sample[i].Name = name
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			p.sample(sample) // a run shorter than a tick has a profile too
			return
		case <-tick.C:
		}
		p.sample(sample)
	}
}

func (p *peakHeapProfile) sample(sample []metrics.Sample) {
	metrics.Read(sample)
	b := breakdownOf(sample)
	p.stacks = max(p.stacks, b.stacks)
	p.gs = max(p.gs, sample[sGoroutines].Value.Uint64())
	if b.resident > p.mem.resident {
		p.mem = b
	}
	if b.live > p.peak || p.prof.Len() == 0 {
		p.peak = b.live
		p.prof.Reset()
		_ = pprof.Lookup("heap").WriteTo(&p.prof, 0) // a failed write leaves the last peak's
	}
}

// finish stops sampling, writes the peak's profile to path and says what the peaks were
// (goroutine stacks are not in a heap profile) and where the peak memory went, per worker
// when workers > 0.
func (p *peakHeapProfile) finish(path string, out io.Writer, workers int) error {
	close(p.stop)
	<-p.done
	fmt.Fprintf(out, "qfsim: peak live heap %.1f MB; peak goroutine stacks %.1f MB, of %d goroutines at most\n", mb(p.peak), mb(p.stacks), p.gs)
	p.mem.write(out, workers)
	return os.WriteFile(path, p.prof.Bytes(), 0o644)
}

// write prints the breakdown, one class a line, in MB and KB per worker.
func (b memoryBreakdown) write(out io.Writer, workers int) {
	perWorker := func(v uint64) string {
		if workers <= 0 {
			return ""
		}
		return fmt.Sprintf(" %7.1f KB per worker", float64(v)/1024/float64(workers))
	}
	fmt.Fprintf(out, "qfsim: peak memory held from the OS (about the peak RSS, sampled every 100 ms) %.1f MB%s, of which:\n", mb(b.resident), perWorker(b.resident))
	for _, c := range []struct {
		name string
		v    uint64
	}{
		{"heap objects (live and garbage)", b.objects},
		{"goroutine stacks", b.stacks},
		{"free heap kept from the OS", b.free},
		{"unused room in heap spans", b.unused},
		{"runtime metadata", b.metadata},
		{"other (profiling and buffers)", b.other},
	} {
		fmt.Fprintf(out, "qfsim:   %-32s %8.1f MB%s\n", c.name, mb(c.v), perWorker(c.v))
	}
	fmt.Fprintf(out, "qfsim:   (live heap at the last GC before it %.1f MB%s)\n", mb(b.live), perWorker(b.live))
}

func mb(v uint64) float64 { return float64(v) / 1e6 }

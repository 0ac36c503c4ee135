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

// peakHeapProfile keeps the heap profile taken when the live heap was largest, sampling the
// live heap every 100 ms of wall time: a run's memory is gone by the time it returns, and its
// peak is what a fleet's size is bounded by.
type peakHeapProfile struct {
	stop   chan struct{}
	done   chan struct{}
	peak   uint64 // live heap bytes
	stacks uint64 // goroutine stack bytes at their peak
	gs     uint64 // goroutines at their peak
	prof   bytes.Buffer
}

func startPeakHeapProfile() *peakHeapProfile {
	p := &peakHeapProfile{stop: make(chan struct{}), done: make(chan struct{})}
	go p.watch()
	return p
}

func (p *peakHeapProfile) watch() {
	defer close(p.done)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/sched/goroutines:goroutines"}}
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
	p.stacks = max(p.stacks, sample[1].Value.Uint64())
	p.gs = max(p.gs, sample[2].Value.Uint64())
	if live := sample[0].Value.Uint64(); live > p.peak || p.prof.Len() == 0 {
		p.peak = live
		p.prof.Reset()
		_ = pprof.Lookup("heap").WriteTo(&p.prof, 0) // a failed write leaves the last peak's
	}
}

// finish stops sampling, writes the peak's profile to path and says what the peaks were
// (goroutine stacks are not in a heap profile).
func (p *peakHeapProfile) finish(path string, out io.Writer) error {
	close(p.stop)
	<-p.done
	fmt.Fprintf(out, "qfsim: peak live heap %.1f MB; peak goroutine stacks %.1f MB, of %d goroutines at most\n", float64(p.peak)/1e6, float64(p.stacks)/1e6, p.gs)
	return os.WriteFile(path, p.prof.Bytes(), 0o644)
}

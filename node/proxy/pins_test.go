package proxy

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// TestRuntimeClosesOnceWhenRetiredAndUnpinned: queries pin and unpin a runtime from several
// goroutines while it is retired, at a drawn moment (some held pinned across it); its engine is never closed under a pinned
// query, is closed once (a second release of its shared engine panics), once retired and the
// last query gone, and no query pins it once retire has returned.
func TestRuntimeClosesOnceWhenRetiredAndUnpinned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eng := &pinsAtClose{fakeEngine: &fakeEngine{name: "c"}}
		rt := &Runtime{revision: "r", names: []string{"c"}, clusters: map[string]*cluster{"c": {name: "c", shared: newSharedEngine(eng)}}}
		eng.rt = rt
		workers := rapid.IntRange(1, 4).Draw(t, "goroutines")
		queries := rapid.SliceOfN(rapid.IntRange(0, 3), workers, workers).Draw(t, "queries each")
		holds := rapid.SliceOfN(rapid.Bool(), workers, workers).Draw(t, "holds its first query until retired")
		retireAfter := rapid.IntRange(0, 8).Draw(t, "retire after pins")
		var pinned, late, holding atomic.Int64
		var retired atomic.Bool
		retiredCh := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range queries[w] {
					wasRetired := retired.Load()
					if !rt.pin() {
						continue
					}
					if wasRetired {
						late.Add(1)
					}
					pinned.Add(1)
					if eng.closed.Load() {
						late.Add(100)
					}
					if i == 0 && holds[w] { // pinned while the runtime is retired
						holding.Add(1)
						<-retiredCh
					}
					rt.unpin()
				}
			}()
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
	wait:
		for pinned.Load() < int64(retireAfter) && holding.Load() == 0 { // while queries come, or after the last
			select {
			case <-finished:
				break wait
			default:
				runtime.Gosched()
			}
		}
		rt.retire()
		retired.Store(true)
		close(retiredCh)
		wg.Wait()
		if n := eng.pinned.Load(); n != 0 {
			t.Fatalf("engine closed with %d queries pinned", n)
		}
		if n := late.Load(); n != 0 {
			t.Fatalf("a query pinned a retired runtime or ran on closed engines (%d)", n)
		}
		if !eng.closed.Load() || !rt.Closed() || rt.Inflight() != 0 {
			t.Fatalf("retired and drained: engine closed %v, Closed %v, %d in flight", eng.closed.Load(), rt.Closed(), rt.Inflight())
		}
	})
}

// pinsAtClose is an engine that notes how many queries pinned rt when it was closed.
type pinsAtClose struct {
	*fakeEngine
	rt     *Runtime
	pinned atomic.Int64
}

func (e *pinsAtClose) Close() error {
	e.pinned.Store(int64(e.rt.Inflight()))
	return e.fakeEngine.Close()
}

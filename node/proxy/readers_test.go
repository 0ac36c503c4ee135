package proxy

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// usedAfterCloseEngine records a use of the engine after its Close: a health check's ping, a
// login's question about its time zone or metadata, a client's hang-up. Its ping waits for
// pinging to be closed, so that a configuration can be activated while it runs.
type usedAfterCloseEngine struct {
	fakeEngine
	pinging     chan struct{} // closed when the first ping starts
	pingRelease chan struct{}
	usedClosed  atomic.Int64
}

func newUsedAfterCloseEngine() *usedAfterCloseEngine {
	return &usedAfterCloseEngine{fakeEngine: fakeEngine{rows: 1}, pinging: make(chan struct{}), pingRelease: make(chan struct{})}
}

func (e *usedAfterCloseEngine) use() error {
	if e.closed.Load() {
		e.usedClosed.Add(1)
		return errors.New("closed pool")
	}
	return nil
}

func (e *usedAfterCloseEngine) Ping(ctx context.Context) error {
	close(e.pinging)
	<-e.pingRelease
	return e.use()
}

func (e *usedAfterCloseEngine) ServerTimeZone() string   { _ = e.use(); return "UTC" }
func (e *usedAfterCloseEngine) ExtendedMetadata() bool   { _ = e.use(); return false }
func (e *usedAfterCloseEngine) ClientClosed(_, _ string) { _ = e.use() }

// A health check pinging the engines of a configuration that is replaced meanwhile keeps them
// open until its ping ends: a closed engine would fail the ping and mark its cluster down, and
// a query routed to it on that runtime would be refused for it.
func TestCheckHealthKeepsTheEnginesItPings(t *testing.T) {
	h := newHarness(t)
	old := newUsedAfterCloseEngine()
	spec := oneGroup(RoundRobin, 0, 0, cl("a", 5, old))
	spec.OwnsEngines = true
	oldRT := h.activate(spec)
	done := make(chan struct{})
	go func() {
		h.core.CheckHealth(context.Background(), time.Minute)
		close(done)
	}()
	<-old.pinging
	next := oneGroup(RoundRobin, 0, 0, cl("a", 5, &fakeEngine{rows: 1}))
	next.OwnsEngines = true
	h.activate(next)
	close(old.pingRelease)
	<-done
	if n := old.usedClosed.Load(); n > 0 {
		t.Fatal("the health check pinged an engine closed under it")
	}
	if !oldRT.clusters["a"].healthy.Load() {
		t.Fatal("a replaced configuration's cluster was marked down by the close of its engine")
	}
	if !old.closed.Load() {
		t.Fatal("the replaced configuration's engine stayed open after the health check")
	}
}

// The readers of the active configuration outside any query (a login's time zone and metadata,
// a client's hang-up) hold it while they ask its engines, so none is asked after its Close.
func TestActiveReadersHoldTheRuntime(t *testing.T) {
	h := newHarness(t)
	var stop atomic.Bool
	var used atomic.Int64
	var engines []*usedAfterCloseEngine
	readers := make(chan struct{})
	go func() {
		defer close(readers)
		for !stop.Load() {
			h.core.LoginTimeZone()
			h.core.ExtendedMetadata()
			h.core.ClientClosed("postgres", "c")
		}
	}()
	for range 2000 {
		e := newUsedAfterCloseEngine()
		engines = append(engines, e)
		spec := oneGroup(RoundRobin, 0, 0, cl("a", 5, e))
		spec.OwnsEngines = true
		h.activate(spec)
	}
	stop.Store(true)
	<-readers
	for _, e := range engines {
		used.Add(e.usedClosed.Load())
	}
	if n := used.Load(); n > 0 {
		t.Fatalf("engines were asked %d times after their Close", n)
	}
}

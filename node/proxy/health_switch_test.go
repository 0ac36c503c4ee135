package proxy

import (
	"context"
	"testing"
	"time"
)

// slowPingEngine answers a ping only when its context ends, as an engine does whose server
// takes a connection and never answers.
type slowPingEngine struct {
	fakeEngine
	pinging chan struct{} // closed when the first ping starts
}

func (e *slowPingEngine) Ping(ctx context.Context) error {
	close(e.pinging)
	<-ctx.Done()
	return ctx.Err()
}

// A configuration switch ends the replaced runtime's health-check pings: its engines close as
// soon as the slow ping gives up, not when the health check's timeout (a minute here) ends, and
// the cancelled ping marks no cluster down. Later checks ping the new configuration's engines.
func TestSwitchEndsTheOldRuntimesHealthChecks(t *testing.T) {
	h := newHarness(t)
	old := &slowPingEngine{fakeEngine: fakeEngine{rows: 1}, pinging: make(chan struct{})}
	spec := oneGroup(RoundRobin, 0, 0, cl("a", 5, old))
	spec.OwnsEngines = true
	oldRT := h.activate(spec)
	done := make(chan struct{})
	go func() {
		h.core.CheckHealth(context.Background(), time.Minute)
		close(done)
	}()
	<-old.pinging
	next := &fakeEngine{rows: 1}
	nextSpec := oneGroup(RoundRobin, 0, 0, cl("a", 5, next))
	nextSpec.OwnsEngines = true
	start := time.Now()
	h.activate(nextSpec)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the health check still pings the replaced configuration's engine 10s after the switch")
	}
	if !old.closed.Load() || !oldRT.Closed() {
		t.Fatal("the replaced configuration's engine stayed open after its health check ended")
	}
	if !oldRT.clusters["a"].healthy.Load() {
		t.Fatal("the ping the switch cancelled marked the replaced configuration's cluster down")
	}
	t.Logf("the replaced runtime closed %v after the switch", time.Since(start))
	// A check started on a runtime already retired pings nothing for long.
	rt := h.core.pinActive()
	rt.retire()
	rt.unpin()
	pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := rt.checks.start(func() { cancel() })
	rt.checks.end(key)
	if pctx.Err() == nil {
		t.Fatal("a ping started on a retired runtime was not cancelled")
	}
}

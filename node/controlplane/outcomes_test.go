package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/node/workerapi"
)

// TestRegistrationAndHeartbeatOutcomesAreCounted: an operator reads a fleet's trouble (a worker
// with the wrong secret, one sending bad bodies, two workers under one name) from these counters,
// so each outcome counts where its name says.
func TestRegistrationAndHeartbeatOutcomesAreCounted(t *testing.T) {
	h := newHarness(t, nil, nil)
	first := h.register("w1")
	h.register("w2")
	second := h.register("w1") // superseded: the newer registration wins
	h.do("POST", workerapi.PathRegister, "wrong", workerapi.MediaWorkerRegister, `{"name":"w3","version":"1"}`)
	h.do("POST", workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"name":"w3"}`)
	h.do("POST", workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"name":"w3"}`)
	h.beat(second, 1)
	h.beat(second, 2)
	h.beat(first, 3) // the superseded session's token
	h.do("POST", workerapi.PathHeartbeat, second, workerapi.MediaHeartbeat, `{"seq":0}`)
	reg, beats := h.cp.metrics.registrations, h.cp.metrics.heartbeats
	for _, c := range []struct {
		vec     *prometheus.CounterVec
		outcome string
		want    float64
	}{
		{reg, "ok", 2}, {reg, "superseded", 1}, {reg, "unauthorized", 1}, {reg, "bad_request", 2},
		{beats, "ok", 2}, {beats, "unauthorized", 1}, {beats, "bad_request", 1},
	} {
		if got := testutil.ToFloat64(c.vec.WithLabelValues(c.outcome)); got != c.want {
			t.Errorf("registrations %v, outcome %s: %v, want %v", c.vec == reg, c.outcome, got, c.want)
		}
	}
}

// TestAnEvictedWorkersTokenIsRefused: once evicted, a worker's session token is worth nothing, and
// its heartbeat is told so (it registers again).
func TestAnEvictedWorkersTokenIsRefused(t *testing.T) {
	h := newHarness(t, nil, nil)
	tok := h.register("w1")
	for range 12 {
		h.cp.Tick(context.Background(), h.e.Advance(10*time.Second))
	}
	if s := h.state("w1"); s.State != workerapi.StateEvicted {
		t.Fatalf("w1 after 120 s of silence: %s", s.State)
	}
	if code := h.beat(tok, 1); code != 401 {
		t.Fatalf("an evicted worker's heartbeat: %d, want 401", code)
	}
	if got := testutil.ToFloat64(h.cp.metrics.heartbeats.WithLabelValues("unauthorized")); got != 1 {
		t.Fatalf("heartbeats{unauthorized} = %v", got)
	}
}

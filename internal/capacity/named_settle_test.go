package capacity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/sim"
)

// TestSettledGuardSendsReleasesAtOnce: once a guard has settled an acquire whose answers were
// lost (settles whose answers were lost too are counted as coordination failures, op="settle"),
// its flusher is idle again: a query's lease released later reaches the control plane within
// its idle hold and the release linger, every time, not after a back-off of about a second
// (another worker waiting for the cap's one slot would wait that long).
func TestSettledGuardSendsReleasesAtOnce(t *testing.T) {
	lossyWorld(t, 7, func(ctx context.Context, n *sim.Node, store *Memory, link *lossyLink, fail func(string, ...any)) {
		metrics := NewMetrics(nil)
		g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w", LeaseTTL: time.Minute, Metrics: metrics})
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		_ = n.Env().Sleep(ctx, time.Second)
		if _, err := g.Acquire(ctx, "c", 1); err == nil {
			fail("an acquire whose answers were all lost was granted")
		}
		_ = n.Env().Sleep(ctx, 2500*time.Millisecond) // settles lost too
		if got := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("settle")); got < 1 {
			fail("settles whose answers were lost: %v counted, want at least 1", got)
		}
		link.off = true
		_ = n.Env().Sleep(ctx, 5*time.Second)
		if store.Count("c") != 0 || g.LostAcquires() != 0 {
			fail("settled: %d leases at the control plane, %d lost acquires; want 0 and 0", store.Count("c"), g.LostAcquires())
			return
		}
		for round := range 5 {
			slot, err := g.Acquire(ctx, "c", 1)
			if err != nil {
				fail("round %d: the cap's slot: %v", round, err)
				return
			}
			_ = n.Env().Sleep(ctx, time.Millisecond)
			slot.Release()
			start := n.Env().Now()
			for store.Count("c") != 0 && n.Env().Now().Sub(start) < 2*time.Second {
				_ = n.Env().Sleep(ctx, 10*time.Millisecond)
			}
			if took := n.Env().Now().Sub(start); took > 200*time.Millisecond {
				fail("round %d: the released lease reached the control plane %v after its release, want within 200 ms", round, took)
			}
			_ = n.Env().Sleep(ctx, 300*time.Millisecond)
		}
	})
}

// TestStoppingGuardSettlesItsLostAcquires: a guard stopped (its node shutting down) while an
// acquire whose answers were lost waits to be settled (the flusher backing off after a settle
// that did not reach the control plane) settles it as it stops, once the link is whole: the control plane frees that lease
// at once, not at its term.
func TestStoppingGuardSettlesItsLostAcquires(t *testing.T) {
	lossyWorld(t, 8, func(ctx context.Context, n *sim.Node, store *Memory, link *lossyLink, fail func(string, ...any)) {
		cut := false // requests do not reach the control plane
		do := func(ctx context.Context, req *http.Request) (*http.Response, error) {
			if cut {
				return nil, errors.New("connection refused")
			}
			return link.do(ctx, req)
		}
		g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(do), Holder: "w", LeaseTTL: time.Minute})
		if err != nil {
			panic(err)
		}
		run, stop := n.Env().WithCancel(n.Ctx())
		g.Start(run)
		_ = n.Env().Sleep(ctx, time.Second)
		if _, err := g.Acquire(ctx, "c", 1); err == nil {
			fail("an acquire whose answers were all lost was granted")
		}
		cut = true
		_ = n.Env().Sleep(ctx, 100*time.Millisecond) // its first settle does not reach the control plane
		if store.Count("c") != 1 || g.LostAcquires() != 1 {
			fail("before the stop: %d leases at the control plane, %d lost acquires; want 1 and 1", store.Count("c"), g.LostAcquires())
		}
		cut, link.off = false, true
		stop()
		_ = n.Env().Sleep(ctx, 200*time.Millisecond)
		if store.Count("c") != 0 || g.LostAcquires() != 0 {
			fail("200 ms after the stop: %d leases at the control plane, %d lost acquires; want 0 and 0", store.Count("c"), g.LostAcquires())
		}
	})
}

// lossyWorld runs body in a task of a simulated node w for up to a minute, over a memory store
// behind a lossyLink that loses every answer until told otherwise, and fails t with what body
// reported.
func lossyWorld(t *testing.T, seed uint64, body func(ctx context.Context, n *sim.Node, store *Memory, link *lossyLink, fail func(string, ...any))) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: seed})
	n := s.AddNode("w", nil)
	store := NewMemory()
	link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil), lose: []bool{true}}
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	s.Spawn(n, "test", func() { body(context.Background(), n, store, link, fail) })
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

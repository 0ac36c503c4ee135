package capacity

import (
	"context"
	"fmt"
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
	ctx := context.Background()
	s := sim.New(sim.Opts{Seed: 7})
	n := s.AddNode("w", nil)
	store := NewMemory()
	link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil), lose: []bool{true}}
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	s.Spawn(n, "test", func() {
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
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

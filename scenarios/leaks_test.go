package scenarios_test

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

func leakCheck(t *testing.T, res *scenarios.Result) scenarios.CheckResult {
	t.Helper()
	for _, c := range res.Checks {
		if c.Name == scenarios.LeakCheckName {
			return c
		}
	}
	t.Fatalf("seed %d: no %q check in %+v", res.Seed, scenarios.LeakCheckName, res.Checks)
	return scenarios.CheckResult{}
}

// TestEndOfRunCatchesALeak plants a leak (every 3rd query's result stream read to its end and
// never closed): the end-of-run oracle must fail naming the rows left open, while the same runs
// without the bug pass.
func TestEndOfRunCatchesALeak(t *testing.T) {
	sc := load(t, "cache-locality.yaml")
	for seed := uint64(1); seed <= 3; seed++ {
		clean := leakCheck(t, scenarios.Run(sc, seed, scenarios.RunOpts{}))
		if !clean.Pass {
			t.Errorf("seed %d without the bug: %s", seed, clean.Detail)
		}
		leaky := leakCheck(t, scenarios.Run(sc, seed, scenarios.RunOpts{PlantLeak: 3}))
		if leaky.Pass || !strings.Contains(leaky.Detail, ": rows ") || leaky.Kind != "left open" {
			t.Errorf("seed %d: every 3rd result stream left open, yet %q says pass=%v kind=%q %s", seed, scenarios.LeakCheckName, leaky.Pass, leaky.Kind, leaky.Detail)
		}
		t.Logf("seed %d planted: %.200s", seed, leaky.Detail)
	}
}

// TestEndOfRunWaitsForRunningQueries: queries still running when the scenario ends (the
// 60-second queries of lease-crash) are not leaks; the oracle stops the clients and lets them
// end before it looks. The virtual time that settle runs is counted in the run's virtual
// seconds (its wall time is in the wall seconds).
func TestEndOfRunWaitsForRunningQueries(t *testing.T) {
	sc := load(t, "lease-crash.yaml")
	for seed := uint64(1); seed <= 2; seed++ {
		res := scenarios.Run(sc, seed, scenarios.RunOpts{})
		c := leakCheck(t, res)
		if !c.Pass || strings.Contains(c.Detail, "(0 open") {
			t.Errorf("seed %d: want a pass with queries open when the clients stopped: %s", seed, c.Detail)
		}
		if res.SettleSeconds < 1 || res.VirtualSeconds != sc.Duration.Seconds()+res.SettleSeconds {
			t.Errorf("seed %d: %v virtual s with a settle of %v s, want the scenario's %v and a settle of 1 s or more",
				seed, res.VirtualSeconds, res.SettleSeconds, sc.Duration)
		}
		t.Logf("seed %d: %s", seed, c.Detail)
	}
}

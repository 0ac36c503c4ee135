package scenarios_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/scenarios"
)

// TestHistoryConservedUnderRandomFaults draws crashes, restarts, graceful stops, partitions
// (one-way ones lose replies), starvation and heals over a small fleet sending query history, then heals
// and restarts everything and lets the uplinks drain. Every finished query must be stored, or
// counted dropped by its uplink, or lost in a crash (counted from the dead uplink); no record
// is stored twice and none appears that no worker finished.
func TestHistoryConservedUnderRandomFaults(t *testing.T) {
	defaultRapidChecks(25)
	nodes := []string{"cp-1", "w-1", "w-2", "w-3"}
	rapid.Check(t, func(rt *rapid.T) {
		tl := randomFaults{
			nodes: nodes, kinds: []string{"crash", "restart", "stop", "partition", "heal", "starve"},
			maxEvents: 8, lastAt: 39, stopGrace: "2s", starveMs: [2]int{100, 3000},
		}.draw(rt)
		buffer := rapid.SampledFrom([]int{20, 200, 5000}).Draw(rt, "buffer")
		yaml := fmt.Sprintf(`
duration: 90s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
network:
  latency: {dist: exponential, min: 1ms, mean: 3ms}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 3}]
workload:
  coordination: {mode: local}
  clusters: [{name: c1, cap: 6, duration: {dist: exponential, mean: 200ms, max: 3s}, failureRate: 0.05}]
  groups: [{name: main, members: [c1], maxQueued: 20, waitTimeout: 2s}]
  arrivals: [{group: main, rate: 4, to: 45s}]
  history: {flushInterval: 500ms, buffer: %d, batch: 25, sendTimeout: 1s}
timeline:
%s  - at: 45s
    heal: {}
  - at: 45s
    restart: all
checks:
  - historyConserved: {}
`, buffer, tl)
		runAndCheck(rt, "random-history.yaml", yaml, tl)
	})
}

// TestHistoryCheckCatchesSilentLoss plants a bug: every 40th finished record never reaches the
// uplink, counted nowhere. The long outage also makes the uplinks drop (and count) hundreds of
// records, which a count-based check would let cover the missing ones; the per-id check must
// fail on every seed, naming missing ids, while the same runs without the bug pass.
func TestHistoryCheckCatchesSilentLoss(t *testing.T) {
	sc := load(t, "history-cp-outage.yaml")
	for seed := uint64(1); seed <= 5; seed++ {
		for _, plant := range []int{0, 40} {
			res := scenarios.Run(sc, seed, scenarios.RunOpts{PlantHistoryLoss: plant})
			var hc scenarios.CheckResult
			for _, c := range res.Checks {
				if strings.HasPrefix(c.Name, "conserved") {
					hc = c
				}
			}
			t.Logf("seed %d, every %dth lost: %s", seed, plant, hc.Detail)
			switch {
			case plant == 0 && !hc.Pass:
				t.Fatalf("seed %d without the bug: %s", seed, hc.Detail)
			case plant > 0 && (hc.Pass || !strings.Contains(hc.Detail, "neither stored nor dropped")):
				t.Fatalf("seed %d: every %dth record lost silently, yet the check says: pass=%v %s", seed, plant, hc.Pass, hc.Detail)
			}
			if plant > 0 && strings.Contains(hc.Detail, "dropped 0,") {
				t.Fatalf("seed %d: want drops in the same run (so counts could have hidden the loss): %s", seed, hc.Detail)
			}
		}
	}
}

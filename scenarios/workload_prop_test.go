package scenarios_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestCapsHoldUnderRandomFaults draws crashes, restarts, partitions (one-way too), heals,
// starvation and clock drift within the drift margin over workers sharing small clusters through control-plane
// leases, and holds both cap oracles at every instant: leases held <= cap (control plane) and
// queries executing <= cap (engines).
func TestCapsHoldUnderRandomFaults(t *testing.T) {
	defaultRapidChecks(25)
	nodes := []string{"cp-1", "w-1", "w-2", "w-3", "w-4"}
	rapid.Check(t, func(rt *rapid.T) {
		tl := randomFaults{
			nodes: nodes, kinds: []string{"crash", "restart", "partition", "heal", "drift", "starve"},
			maxEvents: 10, lastAt: 39, starveMs: [2]int{100, 3000},
			driftRate: [2]float64{0.95, 1.05}, // within what the drift margin covers: 1s of a 6s lease
		}.draw(rt)
		queue := rapid.SampledFrom([]string{"retry", "ordered"}).Draw(rt, "queue")
		yaml := fmt.Sprintf(`
duration: 50s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
network:
  latency: {dist: exponential, min: 1ms, mean: 3ms}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 4}]
workload:
  coordination: {mode: controlPlane, onUnavailable: failClosed, queue: %s, leaseTTL: 6s, driftMargin: 1s}
  clusters:
    - {name: c1, cap: 2, duration: {dist: exponential, mean: 500ms, max: 20s}}
    - {name: c2, cap: 3, duration: {dist: lognormal, median: 300ms, sigma: 1.2, max: 20s}}
  groups: [{name: g, members: [c1, c2], strategy: leastLoaded, maxQueued: 20, waitTimeout: 3s}]
  arrivals: [{group: g, rate: 3, skew: 1}]
timeline:
%schecks:
  - leasesWithinCap: {}
  - engineWithinCap: {}
`, queue, tl)
		runAndCheck(rt, "random-caps.yaml", yaml, tl)
	})
}

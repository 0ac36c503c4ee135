package scenarios_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
	"pgregory.net/rapid"
)

// TestCapsHoldUnderRandomFaults draws crashes, restarts, partitions (one-way too), heals,
// starvation and clock drift within the drift margin over workers sharing small clusters through control-plane
// leases, and holds both cap oracles at every instant: leases held <= cap (control plane) and
// queries executing <= cap (engines).
func TestCapsHoldUnderRandomFaults(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		_ = f.Value.Set("25")
	}
	nodes := []string{"cp-1", "w-1", "w-2", "w-3", "w-4"}
	rapid.Check(t, func(rt *rapid.T) {
		var tl strings.Builder
		for i := range rapid.IntRange(0, 10).Draw(rt, "events") {
			at := time.Duration(rapid.IntRange(1, 39).Draw(rt, fmt.Sprint("at", i))) * time.Second
			node := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("node", i))
			var ev string
			switch rapid.SampledFrom([]string{"crash", "restart", "partition", "heal", "drift", "starve"}).Draw(rt, fmt.Sprint("kind", i)) {
			case "crash":
				ev = "crash: " + node
			case "restart":
				ev = "restart: " + node
			case "partition":
				peer := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("peer", i))
				if peer == node {
					continue
				}
				ev = fmt.Sprintf("partition: {from: %s, to: %s, oneWay: %v}", node, peer, rapid.Bool().Draw(rt, fmt.Sprint("oneWay", i)))
			case "heal":
				ev = "heal: {}"
			case "starve": // every timer of the node late (a GC pause, a starved VM)
				ev = fmt.Sprintf("starve: {node: %s, delay: %dms, for: 10s}", node, rapid.IntRange(100, 3000).Draw(rt, fmt.Sprint("delay", i)))
			case "drift":
				// Within what the drift margin covers: 1s of a 6s lease.
				ev = fmt.Sprintf("drift: {node: %s, rate: %.3f}", node, rapid.Float64Range(0.95, 1.05).Draw(rt, fmt.Sprint("rate", i)))
			}
			fmt.Fprintf(&tl, "  - at: %v\n    %s\n", at, ev)
		}
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
`, queue, tl.String())
		sc, err := scenarios.Parse("random-caps.yaml", []byte(yaml))
		if err != nil {
			rt.Fatalf("%v\n%s", err, yaml)
		}
		seed := rapid.Uint64().Draw(rt, "seed")
		res := scenarios.Run(sc, seed, scenarios.RunOpts{})
		for _, c := range res.Checks {
			if !c.Pass {
				rt.Fatalf("seed %d: %s: %s\ntimeline:\n%s\nlast logs:\n%s", seed, c.Name, c.Detail, tl.String(), strings.Join(tail(res.Logs, 30), "\n"))
			}
		}
	})
}

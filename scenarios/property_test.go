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

// TestRegistryConvergesAfterRandomFaults draws a timeline of crashes, graceful stops, restarts,
// partitions, starvation and drift over a small fleet in the first 80s, heals and restarts
// everything at 80s, and demands that the fleet converge: every worker healthy in the registry
// and in its own eyes from 2m on (40s: staleAfter + evictGrace + starvation's end + heartbeats). Shrinking deletes events, so a failure
// comes back as a short timeline.
func TestRegistryConvergesAfterRandomFaults(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		_ = f.Value.Set("30") // keep go test quick; -rapid.checks=N for more
	}
	workers := []string{"w-1", "w-2", "w-3"}
	nodes := append([]string{"cp-1"}, workers...)
	rapid.Check(t, func(rt *rapid.T) {
		var tl strings.Builder
		n := rapid.IntRange(0, 8).Draw(rt, "events")
		for i := range n {
			at := time.Duration(rapid.IntRange(1, 79).Draw(rt, fmt.Sprint("at", i))) * time.Second
			node := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("node", i))
			var ev string
			switch rapid.SampledFrom([]string{"crash", "restart", "partition", "heal", "starve", "drift", "stop"}).Draw(rt, fmt.Sprint("kind", i)) {
			case "crash":
				ev = "crash: " + node
			case "restart":
				ev = "restart: " + node
			case "stop":
				ev = fmt.Sprintf("stop: {node: %s, grace: 1s}", node)
			case "partition":
				peer := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("peer", i))
				if peer == node {
					continue
				}
				ev = fmt.Sprintf("partition: {from: %s, to: %s, oneWay: %v}", node, peer, rapid.Bool().Draw(rt, fmt.Sprint("oneWay", i)))
			case "heal":
				ev = "heal: {}"
			case "starve":
				ev = fmt.Sprintf("starve: {node: %s, delay: %dms, for: 10s}", node, rapid.IntRange(1, 2000).Draw(rt, fmt.Sprint("delay", i)))
			case "drift":
				ev = fmt.Sprintf("drift: {node: %s, offset: %ds, rate: %.3f}", node, rapid.IntRange(-5, 5).Draw(rt, fmt.Sprint("offset", i)),
					rapid.Float64Range(0.9, 1.1).Draw(rt, fmt.Sprint("rate", i)))
			}
			fmt.Fprintf(&tl, "  - at: %v\n    %s\n", at, ev)
		}
		yaml := fmt.Sprintf(`
duration: 2m30s
intervals: {heartbeat: 2s, staleAfter: 6s, evictGrace: 10s, reaper: 1s, requestTimeout: 1s}
network:
  latency: {dist: exponential, min: 1ms, mean: 3ms}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: %d}]
timeline:
%s  - at: 80s
    heal: {}
  - at: 80s
    restart: all
checks:
  - name: registry converges
    registryState: {worker: workers, state: healthy, from: 2m, mode: always}
  - name: workers healthy in their own eyes
    selfHealth: {worker: workers, state: healthy, from: 2m, mode: always}
`, len(workers), tl.String())
		sc, err := scenarios.Parse("random.yaml", []byte(yaml))
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

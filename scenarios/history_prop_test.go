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

// TestHistoryConservedUnderRandomFaults draws crashes, restarts, graceful stops, partitions
// (one-way ones lose replies), starvation and heals over a small fleet sending query history, then heals
// and restarts everything and lets the uplinks drain. Every finished query must be stored, or
// counted dropped by its uplink, or lost in a crash (counted from the dead uplink); no record
// is stored twice and none appears that no worker finished.
func TestHistoryConservedUnderRandomFaults(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		_ = f.Value.Set("25")
	}
	nodes := []string{"cp-1", "w-1", "w-2", "w-3"}
	rapid.Check(t, func(rt *rapid.T) {
		var tl strings.Builder
		for i := range rapid.IntRange(0, 8).Draw(rt, "events") {
			at := time.Duration(rapid.IntRange(1, 39).Draw(rt, fmt.Sprint("at", i))) * time.Second
			node := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("node", i))
			var ev string
			switch rapid.SampledFrom([]string{"crash", "restart", "stop", "partition", "heal", "starve"}).Draw(rt, fmt.Sprint("kind", i)) {
			case "crash":
				ev = "crash: " + node
			case "restart":
				ev = "restart: " + node
			case "stop":
				ev = fmt.Sprintf("stop: {node: %s, grace: 2s}", node)
			case "partition":
				peer := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("peer", i))
				if peer == node {
					continue
				}
				ev = fmt.Sprintf("partition: {from: %s, to: %s, oneWay: %v}", node, peer, rapid.Bool().Draw(rt, fmt.Sprint("oneWay", i)))
			case "heal":
				ev = "heal: {}"
			case "starve":
				ev = fmt.Sprintf("starve: {node: %s, delay: %dms, for: 10s}", node, rapid.IntRange(100, 3000).Draw(rt, fmt.Sprint("delay", i)))
			}
			fmt.Fprintf(&tl, "  - at: %v\n    %s\n", at, ev)
		}
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
`, buffer, tl.String())
		sc, err := scenarios.Parse("random-history.yaml", []byte(yaml))
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

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
	defaultRapidChecks(30) // keep go test quick; -rapid.checks=N for more
	workers := []string{"w-1", "w-2", "w-3"}
	nodes := append([]string{"cp-1"}, workers...)
	rapid.Check(t, func(rt *rapid.T) {
		tl := randomFaults{
			nodes: nodes, kinds: []string{"crash", "restart", "partition", "heal", "starve", "drift", "stop"},
			maxEvents: 8, lastAt: 79, stopGrace: "1s", starveMs: [2]int{1, 2000},
			driftOffset: true, driftRate: [2]float64{0.9, 1.1},
		}.draw(rt)
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
`, len(workers), tl)
		runAndCheck(rt, "random.yaml", yaml, tl)
	})
}

// defaultRapidChecks sets -rapid.checks to n unless the command line set it.
func defaultRapidChecks(n int) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		_ = f.Value.Set(fmt.Sprint(n))
	}
}

// randomFaults says which faults a property test draws for its timeline, and their bounds.
type randomFaults struct {
	nodes     []string
	kinds     []string // drawn from in this order: the order is part of what rapid generates
	maxEvents int      // events drawn: 0..maxEvents
	lastAt    int      // each at 1s..lastAt seconds
	stopGrace string
	starveMs  [2]int // the delay range of a starvation
	// driftOffset draws a clock offset (-5s..5s) as well as a rate in driftRate.
	driftOffset bool
	driftRate   [2]float64
}

// draw is the timeline's events as scenario YAML lines ("  - at: ...").
func (f randomFaults) draw(rt *rapid.T) string {
	var tl strings.Builder
	for i := range rapid.IntRange(0, f.maxEvents).Draw(rt, "events") {
		at := time.Duration(rapid.IntRange(1, f.lastAt).Draw(rt, fmt.Sprint("at", i))) * time.Second
		node := rapid.SampledFrom(f.nodes).Draw(rt, fmt.Sprint("node", i))
		var ev string
		switch rapid.SampledFrom(f.kinds).Draw(rt, fmt.Sprint("kind", i)) {
		case "crash":
			ev = "crash: " + node
		case "restart":
			ev = "restart: " + node
		case "stop":
			ev = fmt.Sprintf("stop: {node: %s, grace: %s}", node, f.stopGrace)
		case "partition":
			peer := rapid.SampledFrom(f.nodes).Draw(rt, fmt.Sprint("peer", i))
			if peer == node {
				continue
			}
			ev = fmt.Sprintf("partition: {from: %s, to: %s, oneWay: %v}", node, peer, rapid.Bool().Draw(rt, fmt.Sprint("oneWay", i)))
		case "heal":
			ev = "heal: {}"
		case "starve": // every timer of the node late (a GC pause, a starved VM)
			ev = fmt.Sprintf("starve: {node: %s, delay: %dms, for: 10s}", node, rapid.IntRange(f.starveMs[0], f.starveMs[1]).Draw(rt, fmt.Sprint("delay", i)))
		case "drift":
			ev = f.drift(rt, node, i)
		default:
			panic(fmt.Sprintf("randomFaults: unknown kind in %v", f.kinds))
		}
		fmt.Fprintf(&tl, "  - at: %v\n    %s\n", at, ev)
	}
	return tl.String()
}

func (f randomFaults) drift(rt *rapid.T, node string, i int) string {
	if !f.driftOffset {
		return fmt.Sprintf("drift: {node: %s, rate: %.3f}", node, rapid.Float64Range(f.driftRate[0], f.driftRate[1]).Draw(rt, fmt.Sprint("rate", i)))
	}
	offset := rapid.IntRange(-5, 5).Draw(rt, fmt.Sprint("offset", i))
	rate := rapid.Float64Range(f.driftRate[0], f.driftRate[1]).Draw(rt, fmt.Sprint("rate", i))
	return fmt.Sprintf("drift: {node: %s, offset: %ds, rate: %.3f}", node, offset, rate)
}

// runAndCheck parses the scenario, runs it with a drawn seed and fails rt (with the timeline and
// the last logs) on any failed check.
func runAndCheck(rt *rapid.T, name, yaml, timeline string) {
	sc, err := scenarios.Parse(name, []byte(yaml))
	if err != nil {
		rt.Fatalf("%v\n%s", err, yaml)
	}
	seed := rapid.Uint64().Draw(rt, "seed")
	res := scenarios.Run(sc, seed, scenarios.RunOpts{})
	for _, c := range res.Checks {
		if !c.Pass {
			rt.Fatalf("seed %d: %s: %s\ntimeline:\n%s\nlast logs:\n%s", seed, c.Name, c.Detail, timeline, strings.Join(tail(res.Logs, 30), "\n"))
		}
	}
}

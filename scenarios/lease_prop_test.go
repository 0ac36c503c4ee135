package scenarios_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
	"pgregory.net/rapid"
)

// leaseRapidChecks is how many cases TestLeaseCapsUnderRapidFaults draws: QFSIM_RAPID_CHECKS
// (make sim: QFSIM_RAPID_CHECKS=1000), else an explicit -rapid.checks, else 100.
func leaseRapidChecks(t *testing.T) {
	f := flag.Lookup("rapid.checks")
	if f == nil {
		return
	}
	old := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(old) }) // the flag is the process's: leave others' count alone
	if v := os.Getenv("QFSIM_RAPID_CHECKS"); v != "" {
		if _, err := strconv.Atoi(v); err != nil {
			t.Fatalf("QFSIM_RAPID_CHECKS=%q: not a whole number", v)
		}
		_ = f.Value.Set(v)
		return
	}
	if f.Value.String() == f.DefValue {
		_ = f.Value.Set("100")
	}
}

// leaseTTL and driftMargin of the property's fleet. A worker fences its lease TTL-margin after
// sending the last renewal (its clock); the control plane reclaims it TTL after receiving it
// (its clock). With every clock rate in [1-rateBound, 1+rateBound] the worst ratio is
// 1.05/0.95 = 1.105, inside TTL/(TTL-margin) = 1.2, leaving room for the cancel to land.
const (
	leaseTTL    = 6 * time.Second
	driftMargin = time.Second
	rateBound   = 0.05
)

// TestLeaseCapsUnderRapidFaults draws faults over a control plane and four workers sharing two
// small clusters through leases: crashes and restarts of any node, control-plane restarts,
// partitions (one-way too, or every worker at once), lossy and slow links, a lossy network,
// clock skew at the start and clock-rate drift within the drift margin's bound, wall-clock
// steps of any node, starvation of a worker up to far beyond the drift margin; queries short and
// long (tens of seconds, past the lease TTL); and the coordination policy (queue, onUnavailable,
// onLeaseLost). It holds:
//   - always: leases granted <= cap after every grant;
//   - with failClosed: queries executing on each cluster's engine <= cap at every change, the
//     queries of crashed and frozen workers included (self-fencing on or off: where the worker
//     cannot fence itself in time, the control plane's engine fence must).
//
// make sim: QFSIM_RAPID_CHECKS=1000 go test ./scenarios -run TestLeaseCapsUnderRapidFaults -count=1
func TestLeaseCapsUnderRapidFaults(t *testing.T) {
	leaseRapidChecks(t)
	nodes := []string{"cp-1", "w-1", "w-2", "w-3", "w-4"}
	workers := nodes[1:]
	rapid.Check(t, func(rt *rapid.T) {
		var tl strings.Builder
		add := func(at time.Duration, ev string) { fmt.Fprintf(&tl, "  - at: %v\n    %s\n", at, ev) }
		for _, n := range nodes { // clock skew from the start: no absolute time is compared across nodes
			if off := rapid.IntRange(-3600, 3600).Draw(rt, "offset-"+n); off != 0 {
				add(0, fmt.Sprintf("drift: {node: %s, offset: %ds}", n, off))
			}
		}
		for i := range rapid.IntRange(0, 12).Draw(rt, "events") {
			at := time.Duration(rapid.IntRange(1, 34).Draw(rt, fmt.Sprint("at", i))) * time.Second
			node := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("node", i))
			peer := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("peer", i))
			switch rapid.SampledFrom([]string{"crash", "restart", "cpRestart", "partition", "partitionAll", "heal", "drop", "drift", "starve", "clockStep"}).Draw(rt, fmt.Sprint("kind", i)) {
			case "crash":
				add(at, "crash: "+node)
			case "restart":
				add(at, "restart: "+node)
			case "cpRestart":
				add(at, "crash: cp-1")
				down := time.Duration(rapid.IntRange(100, 8000).Draw(rt, fmt.Sprint("down", i))) * time.Millisecond
				add(min(at+down, 39*time.Second), "restart: cp-1")
			case "partition":
				if peer != node {
					add(at, fmt.Sprintf("partition: {from: %s, to: %s, oneWay: %v}", node, peer, rapid.Bool().Draw(rt, fmt.Sprint("oneWay", i))))
				}
			case "partitionAll":
				add(at, "partition: {from: workers, to: cp-1}")
			case "heal":
				add(at, "heal: {}")
			case "drop": // a lossy, slow link (requests and answers lost, timeouts)
				if peer != node {
					add(at, fmt.Sprintf("link: {from: %s, to: %s, drop: %.2f, latency: {dist: exponential, min: 1ms, mean: %dms}}",
						node, peer, rapid.Float64Range(0.05, 0.9).Draw(rt, fmt.Sprint("p", i)), rapid.IntRange(1, 800).Draw(rt, fmt.Sprint("lat", i))))
				}
			case "drift":
				add(at, fmt.Sprintf("drift: {node: %s, rate: %.3f}", node, rapid.Float64Range(1-rateBound, 1+rateBound).Draw(rt, fmt.Sprint("rate", i))))
			case "starve": // up to far beyond the drift margin, and beyond the TTL: only the engine fence holds then
				add(at, fmt.Sprintf("starve: {node: %s, delay: %dms, for: 8s}", rapid.SampledFrom(workers).Draw(rt, fmt.Sprint("starved", i)), rapid.IntRange(50, 15000).Draw(rt, fmt.Sprint("delay", i))))
			case "clockStep": // a wall-clock step: harmless on a worker, a real fault on a control plane
				by := time.Duration(rapid.IntRange(1, 7200).Draw(rt, fmt.Sprint("by", i))) * time.Second
				if rapid.Bool().Draw(rt, fmt.Sprint("back", i)) {
					by = -by
				}
				add(at, fmt.Sprintf("clockStep: {node: %s, by: %v}", node, by))
			}
		}
		queue := rapid.SampledFrom([]string{"retry", "ordered"}).Draw(rt, "queue")
		unavailable := rapid.SampledFrom([]string{"failClosed", "localLimits"}).Draw(rt, "onUnavailable")
		lost := rapid.SampledFrom([]string{"cancel", "overrun"}).Draw(rt, "onLeaseLost")
		drop := rapid.Float64Range(0, 0.05).Draw(rt, "networkDrop")
		// A short grace so evictions happen inside the run (eviction must never free a live lease).
		evictGrace := "5s"
		checks := "  - leasesWithinCap: {}\n"
		if unavailable == "failClosed" { // self-fencing or not: the engine fence holds the cap
			checks += "  - engineWithinCap: {}\n"
		}
		// Short queries and long ones (tens of seconds, longer than the lease TTL).
		durations := []string{"{dist: exponential, mean: 800ms, max: 20s}", "{dist: uniform, min: 10s, max: 40s}",
			"{dist: lognormal, median: 300ms, sigma: 1.5, max: 20s}"}
		d1 := rapid.SampledFrom(durations).Draw(rt, "c1duration")
		d2 := rapid.SampledFrom(durations).Draw(rt, "c2duration")
		yaml := fmt.Sprintf(`
duration: 40s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: %s, requestTimeout: 1s}
network:
  latency: {dist: exponential, min: 1ms, mean: 3ms}
  drop: %.3f
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 4}]
workload:
  coordination: {mode: controlPlane, onUnavailable: %s, queue: %s, onLeaseLost: %s, leaseTTL: %v, driftMargin: %v}
  clusters:
    - {name: c1, cap: 2, duration: %s}
    - {name: c2, cap: 3, duration: %s}
  groups: [{name: g, members: [c1, c2], strategy: leastLoaded, maxQueued: 20, waitTimeout: 3s}]
  arrivals: [{group: g, rate: 3, skew: 1}]
timeline:
%schecks:
%s`, evictGrace, drop, unavailable, queue, lost, leaseTTL, driftMargin, d1, d2, tl.String(), checks)
		sc, err := scenarios.Parse("random-leases.yaml", []byte(yaml))
		if err != nil {
			rt.Fatalf("%v\n%s", err, yaml)
		}
		seed := rapid.Uint64().Draw(rt, "seed")
		res := scenarios.Run(sc, seed, scenarios.RunOpts{})
		for _, c := range res.Checks {
			if !c.Pass {
				rt.Fatalf("seed %d: %s: %s\n%s\nlast logs:\n%s", seed, c.Name, c.Detail, yaml, strings.Join(tail(res.Logs, 30), "\n"))
			}
		}
	})
}

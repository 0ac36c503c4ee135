package scenarios_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// TestWorkloadSameSeedSameRun: a workload run is a function of its seed (trace hash and
// numbers), and a different seed gives a different run.
func TestWorkloadSameSeedSameRun(t *testing.T) {
	sc, err := scenarios.Load("plan-leases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := scenarios.Run(sc, 3, scenarios.RunOpts{}), scenarios.Run(sc, 3, scenarios.RunOpts{}), scenarios.Run(sc, 4, scenarios.RunOpts{})
	if a.TraceHash != b.TraceHash || a.Workload.String() != b.Workload.String() {
		t.Fatalf("seed 3 twice:\n%s %s\n%s %s", a.TraceHash, a.Workload, b.TraceHash, b.Workload)
	}
	if a.TraceHash == c.TraceHash {
		t.Fatal("seeds 3 and 4 gave the same trace")
	}
	w := a.Workload
	if w.Admitted == 0 || w.Denied == 0 || w.CPRequests["/worker/capacity/acquire"] == 0 || w.MaxExecuting["c1"] != 3 {
		t.Fatalf("workload too tame to mean anything: %s %v", w, w.MaxExecuting)
	}
}

// TestVariantResizesFleetAndCaps: the planner's variants change only what they say.
func TestVariantResizesFleetAndCaps(t *testing.T) {
	sc, err := scenarios.Load("plan-leases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v, err := sc.Variant(9, map[string]int{"c2": 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := v.Resolve("workers")
	if len(names) != 9 || v.Workload.Cap("c2") != 7 || v.Workload.Cap("c1") != 3 || sc.Workload.Cap("c2") != 2 {
		t.Fatalf("variant: %d workers, caps c1=%d c2=%d (original c2=%d)", len(names), v.Workload.Cap("c1"), v.Workload.Cap("c2"), sc.Workload.Cap("c2"))
	}
	if _, err := sc.Variant(2, nil, nil); err == nil || !strings.Contains(err.Error(), "w-3") {
		t.Fatalf("a variant too small for the timeline's w-3: %v", err)
	}
	if _, err := sc.Variant(0, map[string]int{"nope": 1}, nil); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown cluster: %v", err)
	}
}

// TestShrinkKeepsTheCause: of five faults only w-1's crash gets it evicted; shrinking a run
// failing "w-1 never evicted" keeps exactly that event and shortens the run.
func TestShrinkKeepsTheCause(t *testing.T) {
	sc := mustParse(t, "shrink.yaml", fleetHead("80s", 3)+evictionIntervals+`
timeline:
  - {at: 2s, crash: w-2}
  - {at: 3s, partition: {from: w-3, to: cp-1}}
  - {at: 4s, heal: {}}
  - {at: 10s, crash: w-1}
  - {at: 12s, restart: w-2}
`+neverEvicted(""))
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if res.Pass() {
		t.Fatal("the check should fail")
	}
	s := scenarios.Shrink(sc, 1, res, 0)
	t.Log(s.Report())
	if len(s.Timeline) != 1 || s.Timeline[0].String() != "{at: 10s, crash: w-1}" || s.Duration >= sc.Duration {
		t.Fatalf("shrunk to %v over %v", s.Timeline, s.Duration)
	}
}

// TestShrinkKeepsTheKindOfViolation: "no worker evicted" fails for w-1 and w-2, each evicted
// after its own crash. Dropping one crash still fails the check, but for one worker only: a
// different violation, so both crashes stay; only the partition and its heal go.
func TestShrinkKeepsTheKindOfViolation(t *testing.T) {
	sc := mustParse(t, "shrink-kind.yaml", fleetHead("80s", 3)+evictionIntervals+`
timeline:
  - {at: 3s, partition: {from: w-3, to: cp-1}}
  - {at: 4s, heal: {}}
  - {at: 10s, crash: w-1}
  - {at: 20s, crash: w-2}
checks:
  - name: no worker evicted
    registryState: {worker: workers, state: evicted, mode: never}
`)
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if res.Pass() {
		t.Fatal("the check should fail")
	}
	s := scenarios.Shrink(sc, 1, res, 0)
	t.Log(s.Report())
	var kept []string
	for _, ev := range s.Timeline {
		kept = append(kept, ev.String())
	}
	if got := strings.Join(kept, " "); got != "{at: 10s, crash: w-1} {at: 20s, crash: w-2}" {
		t.Fatalf("shrunk to %s: want both crashes (dropping either changes who is evicted)", got)
	}
	if !strings.Contains(s.Report(), "broken for w-1, w-2") {
		t.Fatalf("the shrunk failure is not the original one:\n%s", s.Report())
	}
}

// TestShrinkNeverCountsAnInvalidVariant: halving the duration below the check's window makes a
// scenario that does not validate; that is not "still failing". The shrunk run keeps the
// window, the cause (w-1's crash) and the same kind of failure.
func TestShrinkNeverCountsAnInvalidVariant(t *testing.T) {
	sc := mustParse(t, "shrink-window.yaml", fleetHead("80s", 2)+evictionIntervals+`
timeline:
  - {at: 2s, crash: w-2}
  - {at: 10s, crash: w-1}
`+neverEvicted(", from: 5s, to: 75s"))
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	s := scenarios.Shrink(sc, 1, res, 0)
	t.Log(s.Report())
	if len(s.Timeline) != 1 || s.Timeline[0].String() != "{at: 10s, crash: w-1}" || s.Duration != sc.Duration {
		t.Fatalf("shrunk to %v over %v: want w-1's crash over the full 80s (a shorter run cuts the window)", s.Timeline, s.Duration)
	}
	if s.Result.Invalid || !strings.Contains(s.Report(), "broken for w-1") {
		t.Fatalf("the shrunk result is not the original failure:\n%s", s.Report())
	}
}

// TestShrinkSaysWhyItCannot: when nothing can go, the report says so and why.
func TestShrinkSaysWhyItCannot(t *testing.T) {
	sc := mustParse(t, "shrink-none.yaml", fleetHead("80s", 2)+evictionIntervals+`
timeline:
  - {at: 10s, crash: w-1}
`+neverEvicted(", from: 5s, to: 75s"))
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	s := scenarios.Shrink(sc, 1, res, 0)
	rep := s.Report()
	t.Log(rep)
	for _, want := range []string{"could not be shrunk", "the check passed", "did not validate"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestClosedLoopClientsWaitForTheirQuery: with clients: N each worker has at most N queries
// in flight, so on a cluster with room for all of them each client runs its queries back to
// back (8 s after the warmup, 1 s queries: 8 each), and the fairness share is admitted per client.
func TestClosedLoopClientsWaitForTheirQuery(t *testing.T) {
	sc := mustParse(t, "closed.yaml", fleetHead("10s", 2)+`
workload:
  warmup: 2s
  clusters: [{name: c1, cap: 8, duration: {dist: constant, min: 1s}}]
  groups: [{name: g, members: [c1], maxQueued: 10, waitTimeout: 5s}]
  arrivals: [{group: g, clients: 3}]
`)
	w := scenarios.Run(sc, 1, scenarios.RunOpts{}).Workload
	for _, name := range []string{"w-1", "w-2"} {
		if got := w.PerWorker[name]; got[0] < 24 || got[0] > 25 || got[1] != got[0] {
			t.Errorf("%s admitted/submitted %v, want 24 (or 25) of as many (3 clients x 8 queries of 1 s)", name, got)
		}
		if s := w.Shares[name]; s != float64(w.PerWorker[name][0])/3 {
			t.Errorf("%s share %v, want admitted per client", name, s)
		}
	}
	if w.MaxExecuting["c1"] != 6 {
		t.Errorf("peak executing %d, want 6 (2 workers x 3 clients)", w.MaxExecuting["c1"])
	}
	for yaml, want := range map[string]string{
		"arrivals: [{group: g, clients: 3, rate: 1}]":             "cannot be combined",
		"arrivals: [{group: g, clients: -1}]":                     "clients -1",
		"arrivals: [{group: g, clients: 2}, {group: g, rate: 1}]": "cannot be mixed",
	} {
		_, err := scenarios.Parse("closed.yaml", []byte(fleetHead("10s", 2)+`
workload:
  clusters: [{name: c1, cap: 8, duration: {dist: constant, min: 1s}}]
  groups: [{name: g, members: [c1], maxQueued: 10, waitTimeout: 5s}]
  `+yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want it to mention %q", yaml, err, want)
		}
	}
}

// TestWaitingAcquirePaysForItsGrant: with queue: ordered an acquire that waits is granted by a
// lease-table transaction run after the wait, when a release lets it in, so every slot handed
// from one worker to the next costs the release and then the grant's service time. Charged
// when the request arrived instead, the grant hid inside the wait and hand-offs were nearly
// free: a replayed recording waited 18-32 % less at its median than the real fleet did.
// The grant's answer also waits for the waiting record's read (Contention, and MarkGranted when
// the wait was marked in the last 150 ms): charged nothing, they were most of the ~9 ms per
// hand-off a replay still missed.
// Here 8 workers keep a cluster of cap 4 busy with 100 ms queries, each worker's next query
// waiting at the control plane. 50 ms in the grant or the read, one grant at a time (only the
// queue's head asks the store), lets a slot turn over at most every 200 ms (150 ms: the read
// runs beside the next grant); uncharged, every 105 ms.
func TestWaitingAcquirePaysForItsGrant(t *testing.T) {
	for _, times := range []string{
		"/worker/capacity/acquire: 50ms",
		"/worker/capacity/acquire: 1ms, contention: 50ms",
	} {
		sc, err := scenarios.Parse("handoff.yaml", []byte(fleetHead("22s", 8)+`
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 2s}
workload:
  warmup: 2s
  coordination: {mode: controlPlane, queue: ordered, leaseTTL: 10s, driftMargin: 2s}
  clusters: [{name: c1, cap: 4, duration: {dist: constant, min: 100ms}}]
  groups: [{name: g, members: [c1], maxQueued: 50, waitTimeout: 10s}]
  arrivals: [{group: g, rate: 48, skew: 1}]
  controlPlane:
    pool: 10
    default: 0s
    serviceTimes: {`+times+`, /worker/capacity/release-batch: 1ms, /worker/capacity/renew: 1ms}
`))
		if err != nil {
			t.Fatal(err)
		}
		r := scenarios.Run(sc, 1, scenarios.RunOpts{})
		if !r.Pass() {
			t.Fatalf("%s: run failed: %+v", times, r.Checks)
		}
		w := r.Workload
		perTurn := 4 * 20 * time.Second / time.Duration(max(w.Admitted, 1))
		t.Logf("%s: %d admitted in 20 s: %v per turn of a slot", times, w.Admitted, perTurn)
		if w.Admitted < 100 || perTurn < 135*time.Millisecond {
			t.Errorf("%s: %d admitted in 20 s (%v per turn of a slot): a hand-off did not pay the 50 ms", times, w.Admitted, perTurn)
		}
	}
}

// A duration field its distribution does not read is refused, naming it: constant with a mean
// once ran queries that took no time.
func TestDurationRefusesFieldsItDoesNotRead(t *testing.T) {
	for _, d := range []scenarios.Duration{
		{Dist: "constant", Mean: time.Second},
		{Dist: "exponential", Min: time.Millisecond, Mean: time.Second},
		{Dist: "uniform", Min: time.Millisecond, Max: time.Second, Sigma: 1},
		{Dist: "lognormal", Median: time.Second, Mean: time.Second},
	} {
		if _, err := d.Distribution(); err == nil || !strings.Contains(err.Error(), "does not read") {
			t.Errorf("%+v: %v, want a refusal naming the unread field", d, err)
		}
	}
	if _, err := (scenarios.Duration{Dist: "constant", Min: time.Second}).Distribution(); err != nil {
		t.Fatal(err)
	}
}

// A cluster's engine kind is one of the modelled ones, and orphanTimeout belongs to trino.
func TestClusterEngineKindIsValidated(t *testing.T) {
	for cluster, want := range map[string]string{
		"{name: c1, cap: 2, engine: oracle}":                   `engine "oracle": postgres, mysql, duckdb or trino`,
		"{name: c1, cap: 2, orphanTimeout: 1m}":                "orphanTimeout is a trino cluster's client timeout",
		"{name: c1, cap: 2, engine: mysql, orphanTimeout: 1m}": "orphanTimeout is a trino cluster's client timeout",
		"{name: c1, cap: 2, engine: trino, orphanTimeout: 1m}": "",
		"{name: c1, cap: 2, engine: duckdb}":                   "",
	} {
		_, err := scenarios.Parse("kinds.yaml", []byte(fleetHead("10s", 1)+`
workload:
  clusters: [`+cluster+`]
  groups: [{name: g, members: [c1], maxQueued: 10, waitTimeout: 5s}]
  arrivals: [{group: g, rate: 1}]
`))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: err %v, want %q", cluster, err, want)
		}
	}
}

// mustParse parses a scenario written in a test.
func mustParse(t *testing.T, name, yaml string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse(name, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// fleetHead starts a test scenario: its duration, one control plane cp-1 and workers w-1..w-N.
func fleetHead(duration string, workers int) string {
	return fmt.Sprintf("duration: %s\nfleet:\n  controlPlanes: [{name: cp-1}]\n  workers: [{prefix: w-, count: %d}]\n", duration, workers)
}

// evictionIntervals evict a silent worker within seconds.
const evictionIntervals = "intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}\n"

// neverEvicted is the check "w-1 never evicted"; window adds registryState fields (", from: 5s").
func neverEvicted(window string) string {
	return "checks:\n  - name: w-1 never evicted\n    registryState: {worker: w-1, state: evicted, mode: never" + window + "}\n"
}

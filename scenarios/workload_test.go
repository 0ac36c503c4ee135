package scenarios_test

import (
	"strings"
	"testing"

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
	sc, err := scenarios.Parse("shrink.yaml", []byte(`
duration: 80s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 3}]
timeline:
  - {at: 2s, crash: w-2}
  - {at: 3s, partition: {from: w-3, to: cp-1}}
  - {at: 4s, heal: {}}
  - {at: 10s, crash: w-1}
  - {at: 12s, restart: w-2}
checks:
  - name: w-1 never evicted
    registryState: {worker: w-1, state: evicted, mode: never}
`))
	if err != nil {
		t.Fatal(err)
	}
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

// TestShrinkNeverCountsAnInvalidVariant: halving the duration below the check's window makes a
// scenario that does not validate; that is not "still failing". The shrunk run keeps the
// window, the cause (w-1's crash) and the same kind of failure.
func TestShrinkNeverCountsAnInvalidVariant(t *testing.T) {
	sc, err := scenarios.Parse("shrink-window.yaml", []byte(`
duration: 80s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
timeline:
  - {at: 2s, crash: w-2}
  - {at: 10s, crash: w-1}
checks:
  - name: w-1 never evicted
    registryState: {worker: w-1, state: evicted, mode: never, from: 5s, to: 75s}
`))
	if err != nil {
		t.Fatal(err)
	}
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
	sc, err := scenarios.Parse("shrink-none.yaml", []byte(`
duration: 80s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
timeline:
  - {at: 10s, crash: w-1}
checks:
  - name: w-1 never evicted
    registryState: {worker: w-1, state: evicted, mode: never, from: 5s, to: 75s}
`))
	if err != nil {
		t.Fatal(err)
	}
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

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlanWritesTableKneeAndPage(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err := runPlan(&out, &errOut, "../../scenarios/plan-leases.yaml", planFlags{sweeps: []string{"cap=1,6"}, seed: 1, seeds: 1, parallel: 2, out: dir})
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "QUEUE p99 ms") || !strings.Contains(out.String(), "objective: queue p99 <= 2s") {
		t.Fatalf("table:\n%s", out.String())
	}
	for _, f := range []string{"plan.svg", "plan.html", "plan.txt"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if err := runPlan(&out, &errOut, "../../scenarios/plan-leases.yaml", planFlags{sweeps: []string{"nodes=1..3"}, out: dir}); err == nil || !strings.Contains(err.Error(), "--sweep") {
		t.Fatalf("bad sweep: %v", err)
	}
}

// TestRunShrinksTheFirstFailingSeed: a failing run prints the seed and a shrunk timeline.
func TestRunShrinksTheFirstFailingSeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fails.yaml")
	os.WriteFile(path, []byte(`
duration: 40s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
timeline:
  - {at: 2s, crash: w-2}
  - {at: 5s, crash: w-1}
  - {at: 6s, restart: w-2}
checks:
  - name: w-1 never evicted
    registryState: {worker: w-1, state: evicted, mode: never}
`), 0o644)
	var out, errOut bytes.Buffer
	if err := run(&out, &errOut, path, runFlags{seed: 1, seeds: 1}); err != errChecksFailed {
		t.Fatalf("want the checks to fail, got %v", err)
	}
	s := errOut.String()
	if !strings.Contains(s, "failing seed 1: w-1 never evicted") || !strings.Contains(s, "to 1 of 3 timeline events") || !strings.Contains(s, "{at: 5s, crash: w-1}") {
		t.Fatalf("no shrunk report:\n%s", s[max(0, len(s)-1500):])
	}
}

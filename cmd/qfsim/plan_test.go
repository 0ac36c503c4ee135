package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestPlanFromHistoryOnARealConfig: plan --from-history --config replays an export on the
// config's fleet, sweeps the workers, and reports the replayed traffic beside the recording
// (the same rate and execution times, so no difference); a missing scenario or config is named.
func TestPlanFromHistoryOnARealConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "queryflux.yaml")
	os.WriteFile(cfg, []byte(`queryflux:
  role: controlPlane
  coordination: {mode: controlPlane, leaseTtlSecs: 10, driftMarginSecs: 2}
clusters:
  - {name: pg, engine: postgres, endpoint: "db:5432", maxRunningQueries: 2}
clusterGroups:
  - {name: main, members: [pg], maxQueuedQueries: 50, capacityWaitTimeoutSecs: 5}
routingFallback: main
`), 0o644)
	var b strings.Builder
	b.WriteString("# queryflux history v1\n# origin 2026-12-01T12:00:00Z\narrival_ms,worker,group,cluster,status,error_code,queue_ms,exec_ms\n")
	for i := range 40 {
		b.WriteString(strings.Join([]string{itoa(i * 250), "w" + itoa(1+i%2), "main", "pg", "succeeded", "", "0", itoa(300 + 10*(i%5))}, ",") + "\n")
	}
	hist := filepath.Join(dir, "history.csv")
	os.WriteFile(hist, []byte(b.String()), 0o644)
	var out, errOut bytes.Buffer
	err := runPlan(&out, &errOut, "", planFlags{sweeps: []string{"workers=2,4"}, seed: 1, seeds: 2, parallel: 2, out: dir,
		history: hist, config: cfg, scale: 1, objective: time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	s := out.String()
	var row []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) == 11 && f[0] == "main" {
			row = f
		}
	}
	if !strings.Contains(s, "replayed traffic against the recording") || row == nil || row[1] != "4.10" || row[2] != "4.10" ||
		row[5] != "320" || row[10] != "0.0%" || !strings.Contains(s, "knee: workers = 4") {
		t.Fatalf("report (want 4.10 queries/s and exec p50 320 ms, recorded and replayed alike):\n%s", s)
	}
	for _, f := range []planFlags{{sweeps: []string{"workers=2"}}, {sweeps: []string{"workers=2"}, history: hist}} {
		if err := runPlan(&out, &errOut, "", f); err == nil || !strings.Contains(err.Error(), "--from-history FILE with --config CONFIG") {
			t.Errorf("%+v: %v", f, err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

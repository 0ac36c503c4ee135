package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunJSONOneLinePerSeed(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, "../../scenarios/registry-crash.yaml", runFlags{seed: 7, seeds: 2, json: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", out.String())
	}
	var hashes []string
	for i, line := range lines {
		var r struct {
			Seed           uint64  `json:"seed"`
			TraceHash      string  `json:"trace_hash"`
			VirtualSeconds float64 `json:"virtual_seconds"`
			SettleSeconds  float64 `json:"settle_seconds"`
			WallSeconds    float64 `json:"wall_seconds"`
			Events         uint64  `json:"events"`
			Checks         []struct {
				Name   string `json:"name"`
				Pass   bool   `json:"pass"`
				Detail string `json:"detail"`
			} `json:"checks"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Seed != 7+uint64(i) || len(r.TraceHash) != 16 || r.VirtualSeconds-r.SettleSeconds != 120 || r.Events == 0 || len(r.Checks) < 5 {
			t.Errorf("line %d: %+v", i, r)
		}
		hashes = append(hashes, r.TraceHash)
	}
	var again bytes.Buffer
	if err := run(&again, &errOut, "../../scenarios/registry-crash.yaml", runFlags{seed: 7, seeds: 1, json: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again.String(), `"trace_hash":"`+hashes[0]+`"`) {
		t.Errorf("seed 7 again: %s, want hash %s", again.String(), hashes[0])
	}
}

func TestRunFailsWhenACheckFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fail.yaml")
	os.WriteFile(path, []byte(`
duration: 30s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{name: w-1}]
checks:
  - name: a healthy worker evicted
    registryState: {worker: w-1, state: evicted}
`), 0o644)
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, path, runFlags{seed: 1, seeds: 1})
	if err != errChecksFailed {
		t.Fatalf("err = %v, want errChecksFailed", err)
	}
	if !strings.Contains(out.String(), "FAIL a healthy worker evicted") || !strings.Contains(out.String(), "0 of 1 seeds passed") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestRunRejectsABadFile(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(&out, &errOut, "does-not-exist.yaml", runFlags{seed: 1, seeds: 1}); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func TestParallelSeedsPrintInOrderWithTheSameHashes(t *testing.T) {
	var seq, par, errOut bytes.Buffer
	if err := run(&seq, &errOut, "../../scenarios/registry-partition.yaml", runFlags{seed: 1, seeds: 4, json: true}); err != nil {
		t.Fatal(err)
	}
	if err := run(&par, &errOut, "../../scenarios/registry-partition.yaml", runFlags{seed: 1, seeds: 4, json: true, parallel: 3}); err != nil {
		t.Fatal(err)
	}
	strip := func(s string) string { // wall_seconds differ between runs
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m["trace_hash"].(string))
		}
		return strings.Join(out, " ")
	}
	if a, b := strip(seq.String()), strip(par.String()); a != b {
		t.Fatalf("sequential %s, parallel %s", a, b)
	}
}

// --memprofile writes a heap profile (pprof's gzipped protocol buffer), and says the peaks of
// the live heap and the goroutine stacks.
func TestRunWritesAHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	var out, errOut bytes.Buffer
	if err := run(&out, &errOut, "../../scenarios/registry-crash.yaml", runFlags{seed: 7, seeds: 1, memProfile: path}); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the heap profile is not gzipped: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) < 100 {
		t.Fatalf("the heap profile holds %d bytes (%v)", len(raw), err)
	}
	if !strings.Contains(errOut.String(), "peak live heap") || !strings.Contains(errOut.String(), "goroutine stacks") {
		t.Fatalf("stderr %q does not say the peaks", errOut.String())
	}
	checkBreakdown(t, errOut.String(), 3) // registry-crash.yaml: w-1..w-3
}

// qfsim samples no allocation (main sets the rate to 0) unless --memprofile asks for the heap
// profile, which turns the runtime's default sampling on for the runs.
func TestRunSamplesAllocationsOnlyForAHeapProfile(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 0 // as main sets it
	sampled := func() int64 {
		runtime.GC() // the profile's counts are published by the cycles after the allocations
		runtime.GC()
		n, _ := runtime.MemProfile(nil, true)
		recs := make([]runtime.MemProfileRecord, n+100)
		n, _ = runtime.MemProfile(recs, true)
		var objects int64
		for _, r := range recs[:n] {
			objects += r.AllocObjects
		}
		return objects
	}
	const file = "../../scenarios/registry-crash.yaml"
	var out, errOut bytes.Buffer
	before := sampled()
	if err := run(&out, &errOut, file, runFlags{seed: 7, seeds: 1}); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	without := sampled()
	if err := run(&out, &errOut, file, runFlags{seed: 7, seeds: 1, memProfile: filepath.Join(t.TempDir(), "heap.pprof")}); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	with := sampled()
	// (The runtime samples the first allocation of each P after the rate changes.)
	if without-before > int64(runtime.GOMAXPROCS(0)) {
		t.Errorf("a run without --memprofile sampled %d allocations, want none", without-before)
	}
	if with-without <= int64(runtime.GOMAXPROCS(0)) {
		t.Errorf("a run with --memprofile sampled %d allocations, want its run's", with-without)
	}
}

// checkBreakdown asserts that report breaks the peak memory down into its classes, per worker
// of the fleet's workers, and that they add up to the peak; the classes every Go program holds
// (heap objects, goroutine stacks, runtime metadata) and the live heap must not be empty.
func checkBreakdown(t *testing.T, report string, workers int) {
	t.Helper()
	totalRE := regexp.MustCompile(`peak memory held from the OS .* ([0-9.]+) MB +([0-9.]+) KB per worker, of which:`)
	classRE := regexp.MustCompile(`(?m)^qfsim:   ([a-z][a-zA-Z ()]+?) +([0-9.]+) MB +([0-9.]+) KB per worker$`)
	liveRE := regexp.MustCompile(`\(live heap at the last GC before it ([0-9.]+) MB +([0-9.]+) KB per worker\)`)
	m := totalRE.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no peak memory per worker in:\n%s", report)
	}
	// perWorker checks that kb is mb shared by the workers (both rounded to 0.1).
	perWorker := func(name, mb, kb string) float64 {
		t.Helper()
		m, _ := strconv.ParseFloat(mb, 64)
		k, _ := strconv.ParseFloat(kb, 64)
		if want := m * 1e6 / 1024 / float64(workers); math.Abs(k-want) > 0.06*1e6/1024/float64(workers)+0.06 {
			t.Fatalf("%s: %.1f KB per worker, want %.1f MB over %d workers (%.1f KB):\n%s", name, k, m, workers, want, report)
		}
		return m
	}
	total := perWorker("the peak", m[1], m[2])
	var names []string
	sum := 0.0
	classes := map[string]float64{}
	for _, c := range classRE.FindAllStringSubmatch(report, -1) {
		v := perWorker(c[1], c[2], c[3])
		names = append(names, c[1])
		classes[c[1]] = v
		sum += v
	}
	want := []string{"heap objects (live and garbage)", "goroutine stacks", "free heap kept from the OS",
		"unused room in heap spans", "runtime metadata", "other (profiling and buffers)"}
	if !slices.Equal(names, want) {
		t.Fatalf("classes %q, want %q, in:\n%s", names, want, report)
	}
	if total == 0 || math.Abs(sum-total) > 0.35 { // six roundings to 0.1 MB
		t.Fatalf("the classes add up to %.1f MB, the peak is %.1f MB:\n%s", sum, total, report)
	}
	for _, c := range []string{"heap objects (live and garbage)", "goroutine stacks", "runtime metadata"} {
		if classes[c] == 0 {
			t.Fatalf("%s at 0 MB: the breakdown is empty:\n%s", c, report)
		}
	}
	if l := liveRE.FindStringSubmatch(report); l == nil || perWorker("the live heap", l[1], l[2]) == 0 {
		t.Fatalf("no live heap per worker, or none at all, in:\n%s", report)
	}
}

// --workers, --cap and --duration run a resized copy of the file: the fleet, every cluster's cap
// and the virtual time the run covers are the flags', and bad values are named.
func TestRunResizesTheFleet(t *testing.T) {
	var out, errOut bytes.Buffer
	f := runFlags{seed: 1, seeds: 1, json: true, workers: 30, cap: 3, duration: 4 * time.Second}
	if err := run(&out, &errOut, "../../scenarios/plan-fleet.yaml", f); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var r struct {
		VirtualSeconds float64 `json:"virtual_seconds"`
		SettleSeconds  float64 `json:"settle_seconds"`
		Checks         []struct {
			Detail string `json:"detail"`
		} `json:"checks"`
		Workload struct {
			Workers int `json:"workers"`
		} `json:"workload"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.VirtualSeconds-r.SettleSeconds != 4 || r.Workload.Workers != 30 {
		t.Errorf("ran %v virtual s (%v of them the settle) with %d workers, want 4 s and 30", r.VirtualSeconds, r.SettleSeconds, r.Workload.Workers)
	}
	if !strings.Contains(out.String(), "/3") || strings.Contains(out.String(), "/40") {
		t.Errorf("the caps are not 3: %s", out.String())
	}
	for _, bad := range []struct {
		f    runFlags
		want string
	}{
		{runFlags{seeds: 1, workers: -1}, "--workers -1"},
		{runFlags{seeds: 1, cap: -2}, "--cap -2"},
		{runFlags{seeds: 1, duration: -time.Second}, "--duration -1s"},
	} {
		err := run(io.Discard, io.Discard, "../../scenarios/plan-fleet.yaml", bad.f)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want one naming %q", bad.f, err, bad.want)
		}
	}
	err := run(io.Discard, io.Discard, "../../scenarios/registry-crash.yaml", runFlags{seeds: 1, workers: 3})
	if err == nil || !strings.Contains(err.Error(), "no workload") {
		t.Errorf("--workers on a file without a workload: %v", err)
	}
}

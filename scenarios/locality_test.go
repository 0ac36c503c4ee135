package scenarios_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

// withWorkers is cache-locality.yaml resized to n workers sending the fleet the same 16 queries
// per second per group (rate 16/n on each).
func withWorkers(t *testing.T, path string, n int) *scenarios.Scenario {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "workload:\n", fmt.Sprintf("workload:\n  workers: %d\n", n), 1)
	text = strings.ReplaceAll(text, "rate: 4,", fmt.Sprintf("rate: %g,", 16/float64(n)))
	sc, err := scenarios.Parse(path, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestLocalityFiguresInTheSimulator prints the fleet's hit rate with and without preferredWorker
// for 2, 4 and 8 workers (the same total rate) over seeds 1..3, and with the faults of
// cache-locality-faults.yaml (4 workers), through the shipped forwarding path (RESULTS.md). It
// runs only with QUERYFLUX_LOCALITY_FIGURES=1.
func TestLocalityFiguresInTheSimulator(t *testing.T) {
	if os.Getenv("QUERYFLUX_LOCALITY_FIGURES") == "" {
		t.Skip("set QUERYFLUX_LOCALITY_FIGURES=1 to measure")
	}
	for _, run := range []struct {
		file    string
		workers []int
	}{{"cache-locality.yaml", []int{2, 4, 8}}, {"cache-locality-faults.yaml", []int{4}}} {
		file := run.file
		for _, n := range run.workers {
			var shared, plain []string
			for seed := uint64(1); seed <= 3; seed++ {
				r := scenarios.Run(withWorkers(t, file, n), seed, scenarios.RunOpts{})
				g := r.Workload.Groups
				shared = append(shared, fmt.Sprintf("%.1f%%", 100*g["shared"].CacheHitRate))
				plain = append(plain, fmt.Sprintf("%.1f%%", 100*g["plain"].CacheHitRate))
				if e := g["shared"].ClientErrors + g["plain"].ClientErrors; e > 0 {
					t.Errorf("%s N=%d seed %d: %d client errors", file, n, seed, e)
				}
			}
			fmt.Printf("simulated locality %s N=%d seeds 1-3: hit rate with preferredWorker %s, without %s\n",
				file, n, strings.Join(shared, " "), strings.Join(plain, " "))
		}
	}
}

// Bad cache and mix settings are refused naming the field.
func TestLocalitySettingsAreChecked(t *testing.T) {
	base, err := os.ReadFile("cache-locality.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for edit, want := range map[[2]string]string{
		{"preferredWait: 1s", "preferredWait: 2m"}:                                "preferredWait 2m0s",
		{"cache: {ttl: 10m}", "cache: {ttl: 10m, preferredWait: 1s}"}:             "preferredWait needs preferredWorker",
		{"{group: plain, rate: 4, keys: 200", "{group: plain, rate: 4, keys: -1"}: "keys -1",
		{"cacheHitRate: {group: plain,", "cacheHitRate: {group: nope,"}:           `group "nope"`,
	} {
		text := strings.Replace(string(base), edit[0], edit[1], 1)
		if text == string(base) {
			t.Fatalf("edit %q not applied", edit[0])
		}
		_, err := scenarios.Parse("cache-locality.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", edit[1], err, want)
		}
	}
}

package scenarios_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/testlong"
	"github.com/queryflux/queryflux/scenarios"
)

func TestLoadErrorsNameLineAndField(t *testing.T) {
	base := "duration: 1m\nfleet:\n  controlPlanes: [{name: cp-1}]\n  workers: [{name: w-1}]\n"
	cases := map[string]struct{ yaml, want string }{
		"unknown top key":     {base + "bogus: 1\n", "bogus"},
		"unknown fleet key":   {"duration: 1m\nfleet:\n  workerz: []\n", "workerz"},
		"unknown event kind":  {base + "timeline:\n  - at: 1s\n    explode: w-1\n", `sim.yaml:7: unknown field "explode"`},
		"two kinds":           {base + "timeline:\n  - at: 1s\n    crash: w-1\n    restart: w-1\n", "one event per timeline entry"},
		"no at":               {base + "timeline:\n  - crash: w-1\n", "without at"},
		"unknown node":        {base + "timeline:\n  - at: 1s\n    crash: w-9\n", `sim.yaml:7: no node or group named "w-9"`},
		"event after the end": {base + "timeline:\n  - at: 2m\n    crash: w-1\n", "after the scenario's duration"},
		"unknown param":       {base + "timeline:\n  - at: 1s\n    partition: {from: w-1, to: cp-1, oneway: true}\n", "oneway"},
		"unknown check":       {base + "checks:\n  - vibes: {}\n", `unknown field "vibes"`},
		"bad check state":     {base + "checks:\n  - registryState: {worker: w-1, state: happy}\n", `state "happy"`},
		"bad window":          {base + "checks:\n  - registryState: {worker: w-1, state: stale, from: 2m}\n", "window"},
		"no duration":         {"fleet: {}\n", "duration"},
		"unknown role":        {"duration: 1m\nfleet:\n  nodes: [{name: x, role: wizard}]\n", `unknown role "wizard"`},
		"duplicate node":      {"duration: 1m\nfleet:\n  workers: [{name: w-1}, {name: w-1}]\n  controlPlanes: [{name: cp-1}]\n", "named twice"},
		"bad group member":    {base + "  groups: {g: [nope]}\n", `no node named "nope"`},
		"bad latency":         {base + "network: {latency: {dist: gaussian}}\n", "gaussian"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := scenarios.Parse("sim.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to mention %q", err, c.want)
			}
		})
	}
}

func load(t *testing.T, path string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestSameSeedSameHashDifferentSeedsDiffer(t *testing.T) {
	for _, f := range []string{"registry-partition.yaml", "pingpong.yaml"} {
		sc := load(t, f)
		a := scenarios.Run(sc, 3, scenarios.RunOpts{})
		b := scenarios.Run(sc, 3, scenarios.RunOpts{})
		c := scenarios.Run(sc, 4, scenarios.RunOpts{})
		if a.TraceHash != b.TraceHash || a.Events != b.Events {
			t.Errorf("%s seed 3: %s/%d then %s/%d", f, a.TraceHash, a.Events, b.TraceHash, b.Events)
		}
		if a.TraceHash == c.TraceHash {
			t.Errorf("%s: seeds 3 and 4 both hash to %s", f, a.TraceHash)
		}
	}
}

// TestRegistryHashIndependentOfGOMAXPROCS re-executes the test binary with GOMAXPROCS=1 and 4.
func TestRegistryHashIndependentOfGOMAXPROCS(t *testing.T) {
	if os.Getenv("SCENARIO_HASH_CHILD") != "" {
		res := scenarios.Run(load(t, "registry-crash.yaml"), 7, scenarios.RunOpts{})
		os.Stdout.WriteString("HASH=" + res.TraceHash + "\n")
		return
	}
	want := scenarios.Run(load(t, "registry-crash.yaml"), 7, scenarios.RunOpts{}).TraceHash
	for _, procs := range []string{"1", "4"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRegistryHashIndependentOfGOMAXPROCS$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SCENARIO_HASH_CHILD=1", "GOMAXPROCS="+procs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		_, h, _ := strings.Cut(string(out), "HASH=")
		if got := strings.Fields(h + " x")[0]; got != want {
			t.Errorf("GOMAXPROCS=%s: hash %s, in-process %s", procs, got, want)
		}
	}
}

// TestChecksCanFail: the same crash, judged by windows that are too tight or wrong, fails; so a
// passing registry scenario means something.
func TestChecksCanFail(t *testing.T) {
	sc, err := scenarios.Parse("tight.yaml", []byte(`
duration: 1m
intervals: {heartbeat: 2s, staleAfter: 6s, evictGrace: 10s, reaper: 1s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
timeline:
  - at: 20s
    crash: w-1
checks:
  - name: evicted too soon to be possible
    registryState: {worker: w-1, state: evicted, from: 20s, to: 30s}
  - name: the survivor evicted
    registryState: {worker: w-2, state: evicted}
  - name: the crashed worker's token still works
    tokenRevoked: {worker: w-2, at: 50s}
  - name: re-registered without a reason
    reregistered: {worker: w-2}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if !res.Checks[0].Pass {
		t.Fatalf("the run itself failed: %s", res.Checks[0].Detail)
	}
	for _, c := range res.Checks[1:] {
		if c.Name == scenarios.LeakCheckName {
			continue // the built-in end-of-run oracle: nothing leaks here
		}
		if c.Pass {
			t.Errorf("check %q passed but must fail: %s", c.Name, c.Detail)
		}
	}
}

// TestReadmeExampleParses keeps the format documentation honest.
func TestReadmeExampleParses(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "```yaml\n")
	example, _, _ := strings.Cut(rest, "```")
	sc, err := scenarios.Parse("README.md", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Timeline) != 11 || len(sc.Checks) != 6 || len(sc.Nodes()) != 9 {
		t.Fatalf("timeline %d, checks %d, nodes %d", len(sc.Timeline), len(sc.Checks), len(sc.Nodes()))
	}
	if res := scenarios.Run(sc, 1, scenarios.RunOpts{}); !res.Checks[0].Pass {
		t.Fatalf("the example does not even run: %s", res.Checks[0].Detail)
	}
}

// TestScenariosHoldOverManySeeds runs every scenario file over more seeds (interleavings,
// jitter, latencies differ per seed): 2 in make test (plan-fleet 1), 6 in make test-long
// (plan-fleet 2). SCENARIO_SEEDS sets the count; `make sim` runs every file over many more
// seeds, so this is the smoke that keeps make test within its time.
func TestScenariosHoldOverManySeeds(t *testing.T) {
	seeds := testlong.Count(2, 6)
	if v := os.Getenv("SCENARIO_SEEDS"); v != "" {
		if _, err := fmt.Sscan(v, &seeds); err != nil {
			t.Fatalf("SCENARIO_SEEDS=%q: %v", v, err)
		}
	}
	files, _ := filepath.Glob("*.yaml")
	for _, f := range files {
		sc := load(t, f)
		n := seeds
		if strings.HasPrefix(f, "plan-fleet") {
			n = min(n, testlong.Count(1, 2)) // 1,000 workers: qfsim plan runs it more
		}
		for seed := uint64(100); seed < 100+uint64(n); seed++ {
			res := scenarios.Run(sc, seed, scenarios.RunOpts{})
			for _, c := range res.Checks {
				if !c.Pass {
					t.Errorf("%s seed %d: check %q failed: %s", f, seed, c.Name, c.Detail)
				}
			}
		}
	}
}

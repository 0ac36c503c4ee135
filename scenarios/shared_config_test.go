package scenarios_test

import (
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/scenarios"
)

// activeConfigs is an observer that collects, after the run, every worker's active
// configuration; with write set it also writes to w-1's active configuration at `at`.
type activeConfigs struct {
	got   map[string]*config.Config
	write bool
	at    time.Duration
	seen  int // w-2's cluster cap right after the write
	// plans and configs: the query plans shared after the run, and the shared configurations
	plans, configs int
}

func (a *activeConfigs) Start(w *scenarios.World) {
	if !a.write {
		return
	}
	w.Sim.At(a.at, func() {
		cfg := activeOf(w, "w-1")
		cfg.Clusters[0].MaxRunningQueries += 1000
		a.seen = activeOf(w, "w-2").Clusters[0].MaxRunningQueries
	})
}

func (a *activeConfigs) Result(w *scenarios.World) (bool, string) {
	a.got = map[string]*config.Config{}
	a.plans, a.configs = scenarios.SharedPlans(w)
	names, _ := w.Scenario.Resolve("workers")
	for _, n := range names {
		a.got[n] = activeOf(w, n)
	}
	return true, ""
}

func activeOf(w *scenarios.World, name string) *config.Config {
	wk, _ := scenarios.Assembled(w, name).(*assembly.Worker)
	if wk == nil {
		return nil
	}
	cfg, _ := wk.Sync.Active()
	return cfg
}

// The workers of a fleet share the configurations they would each build from equal inputs (a
// revision and equal node-local sections), and sharing changes nothing a run does: the same
// trace hash as a run where every worker builds its own, over revisions, labels, peers and a
// workload, and the end of every run finds the shared configurations as they were built (no
// apply wrote to them). Each shared configuration is compiled into one query plan for them all.
func TestSharedConfigChangesNothing(t *testing.T) {
	for _, file := range []string{"config-edit.yaml", "labels-revisions.yaml", "config-peer-bootstrap.yaml", "lease-weighted.yaml", "plan-fleet.yaml"} {
		t.Run(file, func(t *testing.T) {
			sc, err := scenarios.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if file == "plan-fleet.yaml" {
				if sc, err = sc.Variant(40, nil, nil); err == nil {
					sc, err = sc.WithDuration(15 * time.Second)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var hashes [2]string
			var active [2]*activeConfigs
			for i, own := range []bool{false, true} {
				active[i] = &activeConfigs{}
				res := scenarios.Run(sc, 3, scenarios.RunOpts{NoSharedConfig: own, Observe: []scenarios.Check{active[i]}})
				if !res.Pass() {
					t.Fatalf("NoSharedConfig=%v: %+v", own, res.Checks)
				}
				hashes[i] = res.TraceHash
			}
			if hashes[0] != hashes[1] {
				t.Fatalf("trace hash %s with shared configurations, %s without", hashes[0], hashes[1])
			}
			// Workers with equal inputs hold one configuration when shared, and one each when not
			// (config-peer-bootstrap's workers each name other peers: nothing to share).
			distinct := func(got map[string]*config.Config) (workers, configs int) {
				seen := map[*config.Config]bool{}
				for _, cfg := range got {
					if cfg != nil {
						workers++
						seen[cfg] = true
					}
				}
				return workers, len(seen)
			}
			n, shared := distinct(active[0].got)
			n1, own := distinct(active[1].got)
			if n == 0 || n1 != n || own != n || (file != "config-peer-bootstrap.yaml" && shared >= n) ||
				(file == "config-peer-bootstrap.yaml" && shared != n) {
				t.Fatalf("%d workers with a configuration hold %d shared ones; without sharing %d workers hold %d", n, shared, n1, own)
			}
			// Each shared configuration the workers applied was compiled once for all of them.
			if p := active[0]; p.plans == 0 || p.plans > p.configs {
				t.Fatalf("%d query plans shared for %d shared configurations", p.plans, p.configs)
			}
			t.Logf("%d workers: %d configurations shared (%d plans), %d own", n, shared, active[0].plans, own)
			t.Logf("trace %s either way", hashes[0])
		})
	}
}

// A worker that writes to the configuration it runs would change its peers' when they share it:
// the run says so and fails.
func TestWritingASharedConfigFailsTheRun(t *testing.T) {
	sc, err := scenarios.Load("config-edit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, own := range []bool{false, true} {
		obs := &activeConfigs{write: true, at: 15 * time.Second}
		res := scenarios.Run(sc, 1, scenarios.RunOpts{NoSharedConfig: own, Observe: []scenarios.Check{obs}})
		var run scenarios.CheckResult
		for _, c := range res.Checks {
			if c.Name == "run" {
				run = c
			}
		}
		if own {
			// Each its own: w-2 never sees w-1's write, and nothing was shared to check.
			if !run.Pass || obs.seen >= 1000 {
				t.Fatalf("NoSharedConfig: w-2's cap %d after w-1's write; run: %+v", obs.seen, run)
			}
			continue
		}
		if obs.seen < 1000 {
			t.Fatalf("w-1 and w-2 do not share their configuration (w-2's cap %d after w-1's write)", obs.seen)
		}
		if run.Pass || !strings.Contains(run.Detail, "was written to during the run") {
			t.Fatalf("a write to a shared configuration went unreported: %+v", run)
		}
		t.Logf("reported: %s", run.Detail)
	}
}

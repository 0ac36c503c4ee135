package fleetcheck

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/scenarios"
)

func mustConfig(t *testing.T, coordination string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`queryflux:
  role: worker
  controlPlane: {url: "http://cp:9000", secret: "s"}
  coordination: ` + coordination + `
clusters:
  - {name: pg, engine: postgres, endpoint: "db:5432", maxRunningQueries: 3}
  - {name: off, engine: postgres, endpoint: "db:5432", maxRunningQueries: 3, enabled: false}
clusterGroups:
  - {name: g, members: [pg, off], maxQueuedQueries: 20, capacityWaitTimeoutSecs: 5}
routingFallback: g
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A drift margin too small for the drift asked for fails, with the reason and the margin that
// would do in words.
func TestDriftMarginTooSmallFailsInWords(t *testing.T) {
	cfg := mustConfig(t, "{mode: controlPlane, leaseTtlSecs: 20, driftMarginSecs: 1}")
	rep, err := Check(cfg, Options{Checks: 2, Seed: 1, Overlay: Overlay{MaxDriftRate: 0.05, Duration: 10e9}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0], "driftMarginSecs 1 is too small") ||
		!strings.Contains(rep.Findings[0], "must be at least 2") {
		t.Fatalf("want a failing report naming the margin; got %+v", rep)
	}
	cfg = mustConfig(t, "{mode: controlPlane, leaseTtlSecs: 20, driftMarginSecs: 2}")
	if f, _ := fromConfig(cfg); f.driftFinding(Overlay{MaxDriftRate: 0.05}.withDefaults()) != "" {
		t.Fatal("a margin of 2 of 20 covers ±5% drift (1.111 >= 1.105) but was refused")
	}
}

// The simulated fleet is the config's: enabled clusters with their caps, groups of them, the
// coordination settings; oracles that cannot hold by design are skipped with the reason.
func TestScenarioComesFromTheConfig(t *testing.T) {
	cfg := mustConfig(t, "{mode: controlPlane, onLeaseLost: overrun, leaseTtlSecs: 25, driftMarginSecs: 3, queue: ordered}")
	f, err := fromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checks, skipped := f.oracles()
	yaml := f.scenarioYAML(Overlay{}.withDefaults(), "", checks)
	for _, want := range []string{`name: "pg", cap: 3`, "leaseTTL: 25s, driftMargin: 3s", "queue: ordered", "onLeaseLost: overrun", `members: ["pg"]`} {
		if !strings.Contains(yaml, want) {
			t.Errorf("scenario lacks %q:\n%s", want, yaml)
		}
	}
	if strings.Contains(yaml, `"off"`) {
		t.Errorf("a disabled cluster was simulated:\n%s", yaml)
	}
	if _, ok := skipped["engineWithinCap"]; !ok {
		t.Errorf("onLeaseLost overrun must skip engineWithinCap with its reason; checks %v", checks)
	}
}

func TestBadOverlayIsRefused(t *testing.T) {
	cfg := mustConfig(t, "{mode: controlPlane}")
	if _, err := Check(cfg, Options{Overlay: Overlay{MaxDriftRate: 0.7}}); err == nil || !strings.Contains(err.Error(), "maxDriftRate") {
		t.Fatalf("want an error naming maxDriftRate, got %v", err)
	}
}

// The embedded default's caps hold under drawn faults (make check-config runs it long).
func TestDefaultConfigHolds(t *testing.T) {
	cfg, err := config.Parse(defaultconfig.YAML)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(cfg, Options{Checks: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Fatalf("the embedded default fails:\n%+v\ncounterexample:\n%s", rep, rep.Counterexample)
	}
	if len(rep.Oracles) < 3 {
		t.Fatalf("oracles %+v: want leases, engine and history checked", rep.Oracles)
	}
}

// twoGroups is a fleet with two clusters and two groups, so drawn edits can move members and
// routes, with a short config poll so a run converges soon after the faults heal.
func twoGroups(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`queryflux:
  role: worker
  controlPlane: {url: "http://cp:9000", secret: "s", pollTimeoutSecs: 5, retryMaxSecs: 2}
  coordination: {mode: controlPlane, leaseTtlSecs: 10, driftMarginSecs: 2}
clusters:
  - {name: a, engine: postgres, endpoint: "db:5432", maxRunningQueries: 2}
  - {name: b, engine: postgres, endpoint: "db:5432", maxRunningQueries: 3}
clusterGroups:
  - {name: ga, members: [a], maxQueuedQueries: 20, capacityWaitTimeoutSecs: 5}
  - {name: gb, members: [b], maxQueuedQueries: 20, capacityWaitTimeoutSecs: 5}
routingFallback: ga
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Workers that apply a revision's groups and caps and keep their old routing (a planted bug)
// fail the config oracle; rapid shrinks the counterexample to an edit of the routing and at most
// one other event (the shrink is bounded in wall time, and the machine may be loaded), and it
// reproduces the failure with the bug and passes without it.
func TestConfigOracleCatchesAndShrinksAPlantedHalfApply(t *testing.T) {
	opts := Options{Checks: 40, Seed: 1, ShrinkTime: 15 * time.Second, plantHalfApply: true,
		Overlay: Overlay{Workers: 2, Duration: 12 * time.Second, Rate: 0.5}}
	rep, err := Check(twoGroups(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	var verdict Oracle
	for _, o := range rep.Oracles {
		if o.Name == "configNeverHalfApplied" {
			verdict = o
		}
	}
	if verdict.Verdict != "fail" || !strings.Contains(verdict.Detail, "half-applied") || !strings.Contains(verdict.Detail, "routing that of") {
		t.Fatalf("config oracle %+v: want a failure naming the half-applied routing\n%+v", verdict, rep)
	}
	drawn, _, _ := strings.Cut(rep.Counterexample, "# the faults heal")
	events := strings.Count(drawn, "- {at:")
	if events > 2 || !strings.Contains(drawn, "routes:") {
		t.Fatalf("shrunk to %d drawn events, want an edit of the routing and at most one more:\n%s", events, rep.Counterexample)
	}
	seed, err := strconv.ParseUint(strings.Fields(rep.Counterexample)[5], 10, 64)
	if err != nil {
		t.Fatalf("no seed in the counterexample's first line: %v\n%s", err, rep.Counterexample)
	}
	sc, err := scenarios.Parse("counterexample.yaml", []byte(rep.Counterexample))
	if err != nil {
		t.Fatal(err)
	}
	if res := scenarios.Run(sc, seed, scenarios.RunOpts{PlantHalfApply: true}); res.Pass() {
		t.Errorf("the counterexample passes with the planted bug")
	}
	if res := scenarios.Run(sc, seed, scenarios.RunOpts{}); !res.Pass() {
		t.Errorf("the counterexample fails without the planted bug: %+v", res.Checks)
	}
	t.Logf("%d runs; shrunk counterexample:\n%s", rep.Runs, rep.Counterexample)
}

// With drawn edits (caps, members, routes, bad revisions) and faults, every node of a
// two-group fleet runs one whole revision and converges to the latest once the faults heal.
func TestDrawnEditsApplyWhole(t *testing.T) {
	rep, err := Check(twoGroups(t), Options{Checks: 15, Seed: 2, Overlay: Overlay{Workers: 3, Duration: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Fatalf("%+v\ncounterexample:\n%s", rep, rep.Counterexample)
	}
}

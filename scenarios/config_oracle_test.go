package scenarios_test

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

// configNeverHalfApplied catches workers that apply a revision's groups and caps but keep the
// routing they had (a planted bug): it names the worker, its active revision and the revision
// whose routing it still runs.
func TestConfigOracleCatchesAPlantedHalfApply(t *testing.T) {
	sc, err := scenarios.Load("config-whole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := scenarios.Run(sc, 1, scenarios.RunOpts{PlantHalfApply: true})
	for _, c := range res.Checks {
		if !strings.HasPrefix(c.Name, "configNeverHalfApplied") {
			continue
		}
		if c.Pass || !strings.Contains(c.Detail, "is half-applied: its active revision is") ||
			!strings.Contains(c.Detail, "its routing that of revision") {
			t.Fatalf("the planted half-apply was not caught, or not named: pass=%v %s", c.Pass, c.Detail)
		}
		t.Logf("caught: %s", c.Detail)
		return
	}
	t.Fatal("config-whole.yaml has no configNeverHalfApplied check")
}

// A configEdit names only the workload's clusters and groups, with caps of at least 1.
func TestConfigEditRefusesWhatTheWorkloadLacks(t *testing.T) {
	const head = `duration: 10s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 1}]
workload:
  clusters: [{name: a, cap: 1}]
  groups: [{name: ga, members: [a]}]
  arrivals: [{group: ga, rate: 1}]
timeline:
`
	for edit, want := range map[string]string{
		"{caps: {z: 2}}":       "caps.z",
		"{caps: {a: 0}}":       "caps.a",
		"{members: {ga: [z]}}": `no workload cluster named "z"`,
		"{members: {gz: [a]}}": "members.gz",
		"{routes: {ga: gz}}":   "routes.ga",
		"{bad: true}":          "give caps, members or routes",
		"{caps: {a: 2}, x: 1}": "x",
	} {
		_, err := scenarios.Parse("edit.yaml", []byte(head+"  - {at: 1s, configEdit: "+edit+"}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("configEdit %s: got %v, want an error naming %q", edit, err, want)
		}
	}
}

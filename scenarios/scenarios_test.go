package scenarios_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

func TestEveryScenarioFilePasses(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			sc, err := scenarios.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			res := scenarios.Run(sc, 1, scenarios.RunOpts{})
			for _, c := range res.Checks {
				if !c.Pass {
					t.Errorf("check %q failed: %s", c.Name, c.Detail)
				} else {
					t.Logf("ok %s: %s", c.Name, c.Detail)
				}
			}
			if t.Failed() {
				t.Logf("last log lines:\n%s", strings.Join(tail(res.Logs, 60), "\n"))
			}
		})
	}
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Workers counts every worker of the fleet: named ones, {prefix, count} entries, and nodes of
// role worker in the nodes: list; control planes and other roles are not workers.
func TestScenarioCountsItsWorkers(t *testing.T) {
	sc, err := scenarios.Parse("workers.yaml", []byte(`duration: 1s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{name: w-a}, {prefix: w-, count: 3}]
  nodes:
    - {name: w-b, role: worker}
    - {prefix: p-, count: 2, role: pingpong}
`))
	if err != nil {
		t.Fatal(err)
	}
	if n := sc.Workers(); n != 5 {
		t.Fatalf("Workers() = %d, want 5 (w-a, w-1..w-3, w-b)", n)
	}
}

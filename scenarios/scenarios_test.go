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

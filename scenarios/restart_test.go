package scenarios_test

import (
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

// TestARestartedWorkerHoldsQueriesForItsFirstConfig: in cache-locality-faults.yaml, w-2
// restarts at 45s and, on seeds 7 and 37, is sent a query in the milliseconds before its first
// configuration is active. The worker holds it until the configuration arrives, so no client
// sees an error (`make sim` runs the file over many more seeds).
func TestARestartedWorkerHoldsQueriesForItsFirstConfig(t *testing.T) {
	sc := load(t, "cache-locality-faults.yaml")
	for _, seed := range []uint64{7, 37} {
		for _, c := range scenarios.Run(sc, seed, scenarios.RunOpts{}).Checks {
			if !c.Pass {
				t.Errorf("seed %d: check %q failed: %s", seed, c.Name, c.Detail)
			}
		}
	}
}

package scenarios_test

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// A simulated fleet's tasks run on coroutines of 8 KB (sim.growStack), and a task that outgrows
// one has its stack copied to 16 KB, which the coroutine keeps for every task after: at 1,000
// workers a path that crosses costs megabytes of stacks and tens of millions of instructions of
// copying (a configuration held by value on the config sync's install path did: RESULTS.md,
// session 26). In a planning fleet no task grows more than a few stacks whatever the fleet's
// size (the control plane's, a first install that derives the configuration every worker
// shares), but for the queries' contended lease requests, which still do (knownToGrow). The
// run collects nothing: a collection may move a stack too.
func TestFleetTasksFitTheirStacks(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's frames are larger than the shipped build's")
	}
	sc, err := scenarios.Load("plan-fleet.yaml")
	if err == nil {
		sc, err = sc.Variant(200, map[string]int{"": 10}, nil)
	}
	if err == nil {
		sc, err = sc.WithDuration(12 * time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if !res.Pass() {
		t.Fatalf("%+v", res.Checks)
	}
	const fewMax = 3
	knownToGrow := []string{"query"}
	grown := map[string]int{}
	for _, name := range res.GrownStacks {
		grown[name]++
	}
	var many []string
	for name, n := range grown {
		if n > fewMax && !slices.Contains(knownToGrow, name) {
			many = append(many, fmt.Sprintf("%s (%d)", name, n))
		}
	}
	if len(many) > 0 {
		slices.Sort(many)
		t.Errorf("tasks that outgrew the 8 KB stacks of more than %d coroutines of 200 workers: %s", fewMax, strings.Join(many, ", "))
	}
	t.Logf("%d coroutines' stacks grown, by %v", len(res.GrownStacks), grown)
}

package main

import (
	"fmt"
	"io"

	"github.com/queryflux/queryflux/scenarios"
)

// reportShrunk shrinks the first failing seed's timeline (events dropped in halves, then one
// at a time, then the duration halved, while the same checks still fail) and prints it.
func reportShrunk(out io.Writer, sc *scenarios.Scenario, res *scenarios.Result) {
	fmt.Fprintf(out, "--- shrinking seed %d (%d timeline events)...\n", res.Seed, len(sc.Timeline))
	s := scenarios.Shrink(sc, res.Seed, res, 0)
	fmt.Fprint(out, s.Report())
}

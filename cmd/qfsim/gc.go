package main

import (
	"os"
	"runtime/debug"
)

// simGCPercent is qfsim's GOGC: the simulator allocates much short-lived garbage, and each
// collection scans every task's stack (ten tasks per simulated worker).
const simGCPercent = 400

// setGC sets the collector for simulator runs, unless the GOGC environment variable does.
func setGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(simGCPercent)
	}
}

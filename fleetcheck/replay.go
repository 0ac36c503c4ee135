package fleetcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/history/histfile"
	"github.com/queryflux/queryflux/scenarios"
)

// ReplayOptions shape a replay; zero fields take the defaults.
type ReplayOptions struct {
	Workers int           // simulated workers; default one per recorded worker
	Scale   float64       // the arrivals' time compression; default 1
	Latency time.Duration // one-way network latency, worker to control plane; default 1ms
}

// Replay is the simulated fleet of cfg (its clusters, caps, groups and coordination) replaying
// the history export at path, with no faults. The run lasts until the last recorded arrival
// plus the longest recorded execution and the longest capacity wait, so every replayed query
// can finish.
func Replay(cfg *config.Config, path string, ro ReplayOptions) (*scenarios.Scenario, error) {
	if ro.Scale == 0 {
		ro.Scale = 1
	}
	if ro.Latency == 0 {
		ro.Latency = time.Millisecond
	}
	if ro.Scale < 0 || ro.Workers < 0 || ro.Latency < 0 {
		return nil, fmt.Errorf("replay: scale %v, workers %d, latency %v: none may be negative", ro.Scale, ro.Workers, ro.Latency)
	}
	workers, scale := ro.Workers, ro.Scale
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	hist, err := histfile.Read(fh)
	fh.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := fromConfig(cfg)
	if err != nil {
		return nil, err
	}
	recorded := map[string]bool{}
	var longest int64
	for _, e := range hist.Entries {
		recorded[e.Worker] = true
		longest = max(longest, e.ExecMs)
	}
	if workers <= 0 {
		workers = len(recorded)
	}
	var wait time.Duration
	for _, g := range f.groups {
		wait = max(wait, g.waitTimeout)
	}
	o := Overlay{Workers: workers, replay: abs, scale: scale, latency: ro.Latency,
		Duration: time.Duration(float64(hist.Span())/scale) + time.Duration(longest)*time.Millisecond + wait + 5*time.Second}.withDefaults()
	f.historyOn = false
	checks, _ := f.oracles()
	body := f.scenarioYAML(o, "", slices.DeleteFunc(checks, func(c string) bool { return c == "historyConserved" || c == "configNeverHalfApplied" }))
	return scenarios.Parse("replay.yaml", []byte(body))
}

// Package plan is capacity planning on the simulator: it sweeps a scenario's fleet size and
// cluster caps (scenarios.Scenario.Variant), runs every point for a few seeds, and reports
// queue-time percentiles, denials, Jain's fairness index of per-worker admitted share,
// admitted throughput and control-plane request rate per point, plus the knee: the smallest
// cap, or the largest fleet, that meets the scenario's queue-time objective. Render writes the
// table as an SVG plot and an HTML page.
//
// determinism: outside the simulator (a planning tool: runs simulations in parallel goroutines and writes files)
package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// Axis is one swept parameter: "workers", "cap" (every cluster) or "cap.NAME" (one cluster).
type Axis struct {
	Name   string
	Values []int
}

// ParseSweep parses "workers=10..500", "workers=10..500:50", "cap=1,2,4,8" or "cap.c1=2..6".
// A range without a step takes 10 steps (at least 1 apart).
func ParseSweep(s string) (Axis, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok || spec == "" {
		return Axis{}, fmt.Errorf("--sweep %q: want NAME=FROM..TO[:STEP] or NAME=V1,V2,...", s)
	}
	if name != "workers" && name != "cap" && !strings.HasPrefix(name, "cap.") {
		return Axis{}, fmt.Errorf("--sweep %q: NAME is workers, cap or cap.CLUSTER", s)
	}
	a := Axis{Name: name}
	if from, rest, isRange := strings.Cut(spec, ".."); isRange {
		to, stepS, hasStep := strings.Cut(rest, ":")
		lo, err1 := strconv.Atoi(from)
		hi, err2 := strconv.Atoi(to)
		if err1 != nil || err2 != nil || lo < 1 || hi < lo {
			return Axis{}, fmt.Errorf("--sweep %q: range FROM..TO needs integers 1 <= FROM <= TO", s)
		}
		step := max((hi-lo)/10, 1)
		if hasStep {
			st, err := strconv.Atoi(stepS)
			if err != nil || st < 1 {
				return Axis{}, fmt.Errorf("--sweep %q: step %q must be an integer >= 1", s, stepS)
			}
			step = st
		}
		for v := lo; v <= hi; v += step {
			a.Values = append(a.Values, v)
		}
		if a.Values[len(a.Values)-1] != hi {
			a.Values = append(a.Values, hi)
		}
		return a, nil
	}
	for _, f := range strings.Split(spec, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return Axis{}, fmt.Errorf("--sweep %q: value %q must be an integer >= 1", s, f)
		}
		a.Values = append(a.Values, v)
	}
	slices.Sort(a.Values)
	return a, nil
}

// Options tune a plan.
type Options struct {
	Seed        uint64 // first seed (default 1)
	Seeds       int    // seeds per point (default 3)
	Parallel    int    // runs at once (default 1)
	Calibration *scenarios.Calibration
	// Progress, if set, is told after each run: runs done, of all.
	Progress func(done, total int)
}

// Point is one sweep point's results, averaged over its seeds.
type Point struct {
	Params           map[string]int `json:"params"`
	Workers          int            `json:"workers"`
	QueueP50Ms       float64        `json:"queue_p50_ms"`
	QueueP99Ms       float64        `json:"queue_p99_ms"`
	Denied           float64        `json:"denied"`
	DeniedPerSec     float64        `json:"denied_per_sec"`
	TimedOut         float64        `json:"timed_out"`
	Fairness         float64        `json:"fairness"`
	AdmittedPerSec   float64        `json:"admitted_per_sec"`
	CPRequestsPerSec float64        `json:"cp_requests_per_sec"`
	Violations       int            `json:"violations"` // lease + engine oracle violations, all seeds
	ChecksFailed     int            `json:"checks_failed"`
	MeetsObjective   bool           `json:"meets_objective"`
	WallSeconds      float64        `json:"wall_seconds"`
	// Spread is each metric's [min, max] over the point's seeds, by the JSON name of its mean.
	Spread map[string][2]float64 `json:"spread"`
	// QueueP99Censored: in some seed the p99 was a wait timeout (queries gave up at that
	// wait), so the true p99 is at least the value shown.
	QueueP99Censored bool `json:"queue_p99_censored"`
}

// spreadOf widens a [min, max] range by v.
func spreadOf(sp map[string][2]float64, key string, v float64) {
	r, ok := sp[key]
	if !ok {
		r = [2]float64{v, v}
	}
	sp[key] = [2]float64{math.Min(r[0], v), math.Max(r[1], v)}
}

// Plan is a finished sweep.
type Plan struct {
	Scenario  string                 `json:"scenario"`
	Axes      []Axis                 `json:"axes"`
	Objective scenarios.Objective    `json:"objective"`
	Points    []Point                `json:"points"`
	Knees     []Knee                 `json:"knees"`
	Warnings  []string               `json:"warnings,omitempty"`
	Cal       *scenarios.Calibration `json:"calibration,omitempty"`
	// Traffic compares a replayed recording's traffic with the recording, per group.
	Traffic []TrafficRow `json:"traffic,omitempty"`
}

// Knee is the sweep's answer for one value of the other axis (or the only answer).
type Knee struct {
	Fixed  map[string]int `json:"fixed,omitempty"` // the other axis' value, if two axes
	Axis   string         `json:"axis"`
	Value  int            `json:"value"` // 0: no point meets the objective
	Reason string         `json:"reason"`
}

// Run sweeps sc over axes (one or two) and returns the plan.
func Run(sc *scenarios.Scenario, axes []Axis, o Options) (*Plan, error) {
	if len(axes) == 0 || len(axes) > 2 {
		return nil, fmt.Errorf("plan: one or two --sweep axes, got %d", len(axes))
	}
	if sc.Workload == nil {
		return nil, fmt.Errorf("plan: %s has no workload: section", sc.Path)
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Seeds == 0 {
		o.Seeds = 3
	}
	o.Seeds, o.Parallel = max(o.Seeds, 1), max(o.Parallel, 1)
	grid := combos(axes)
	variants := make([]*scenarios.Scenario, len(grid))
	for i, params := range grid {
		v, err := variant(sc, params, o.Calibration)
		if err != nil {
			return nil, err
		}
		variants[i] = v
	}
	results := make([][]*scenarios.Result, len(grid))
	for i := range results {
		results[i] = make([]*scenarios.Result, o.Seeds)
	}
	type job struct{ point, seed int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	remaining := make([]int, len(grid))
	done, total := 0, len(grid)*o.Seeds
	points := make([]Point, len(grid))
	for i := range remaining {
		remaining[i] = o.Seeds
	}
	for range o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := scenarios.Run(variants[j.point], o.Seed+uint64(j.seed), scenarios.RunOpts{})
				mu.Lock()
				results[j.point][j.seed] = r
				remaining[j.point]--
				if remaining[j.point] == 0 {
					points[j.point] = summarize(grid[j.point], variants[j.point], results[j.point])
				}
				done++
				if o.Progress != nil {
					o.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	for p := range grid {
		for s := range o.Seeds {
			jobs <- job{p, s}
		}
	}
	close(jobs)
	wg.Wait()
	pl := &Plan{Scenario: sc.Name, Axes: axes, Objective: sc.Workload.Objective, Points: points, Cal: o.Calibration,
		Traffic: traffic(sc, results)}
	if pl.Objective.QueueP99 == 0 && pl.Objective.QueueP50 == 0 {
		pl.Warnings = append(pl.Warnings, "the scenario states no workload.objective (queueP99/queueP50): no knee")
	} else {
		pl.Knees = knees(pl)
	}
	for _, p := range points {
		if p.Violations > 0 {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("point %v: %d cap oracle violations", p.Params, p.Violations))
		}
	}
	return pl, nil
}

func variant(sc *scenarios.Scenario, params map[string]int, cal *scenarios.Calibration) (*scenarios.Scenario, error) {
	caps := map[string]int{}
	workers := 0
	for k, v := range params {
		switch {
		case k == "workers":
			workers = v
		case k == "cap":
			caps[""] = v
		default:
			caps[strings.TrimPrefix(k, "cap.")] = v
		}
	}
	return sc.Variant(workers, caps, cal)
}

// combos is the grid of the axes, first axis outermost.
func combos(axes []Axis) []map[string]int {
	out := []map[string]int{{}}
	for _, a := range axes {
		var next []map[string]int
		for _, base := range out {
			for _, v := range a.Values {
				m := map[string]int{a.Name: v}
				for k, bv := range base {
					m[k] = bv
				}
				next = append(next, m)
			}
		}
		out = next
	}
	return out
}

func summarize(params map[string]int, sc *scenarios.Scenario, rs []*scenarios.Result) Point {
	p := Point{Params: params, Spread: map[string][2]float64{}}
	n := float64(len(rs))
	secs := (sc.Duration - sc.Workload.Warmup).Seconds()
	timeout := shortestWait(sc)
	for _, r := range rs {
		w := r.Workload
		for k, v := range map[string]float64{"queue_p50_ms": w.QueueP50Ms, "queue_p99_ms": w.QueueP99Ms, "fairness": w.Fairness,
			"admitted_per_sec": w.AdmittedPerSec, "cp_requests_per_sec": w.CPRequestsPerSec, "denied_per_sec": float64(w.Denied) / max(secs, 1e-9)} {
			spreadOf(p.Spread, k, v)
		}
		if w.TimedOut > 0 && timeout > 0 && w.QueueP99Ms >= 0.99*timeout {
			p.QueueP99Censored = true
		}
		p.Workers = w.Workers
		p.QueueP50Ms += w.QueueP50Ms / n
		p.QueueP99Ms += w.QueueP99Ms / n
		p.Denied += float64(w.Denied) / n
		p.TimedOut += float64(w.TimedOut) / n
		p.Fairness += w.Fairness / n
		p.AdmittedPerSec += w.AdmittedPerSec / n
		p.CPRequestsPerSec += w.CPRequestsPerSec / n
		p.Violations += w.LeaseViolations + w.EngineViolations
		p.WallSeconds += r.WallSeconds
		if !r.Pass() {
			p.ChecksFailed++
		}
	}
	if secs > 0 {
		p.DeniedPerSec = p.Denied / secs
	}
	obj := sc.Workload.Objective
	p.MeetsObjective = (obj.QueueP99 == 0 || p.QueueP99Ms <= float64(obj.QueueP99)/float64(time.Millisecond)) &&
		(obj.QueueP50 == 0 || p.QueueP50Ms <= float64(obj.QueueP50)/float64(time.Millisecond)) &&
		p.Violations == 0
	return p
}

// shortestWait is the smallest group waitTimeout in milliseconds (0: none is bounded): a p99
// at it is the timeout, not a measured wait.
func shortestWait(sc *scenarios.Scenario) float64 {
	w := 0.0
	for _, g := range sc.Workload.Groups {
		if ms := float64(g.WaitTimeout) / float64(time.Millisecond); ms > 0 && (w == 0 || ms < w) {
			w = ms
		}
	}
	return w
}

// knees: along the last axis, the smallest cap (cap axes) or the largest fleet (workers)
// meeting the objective, for each value of the first axis if there are two.
func knees(pl *Plan) []Knee {
	along := pl.Axes[len(pl.Axes)-1]
	groups := map[int][]Point{}
	var fixedVals []int
	var fixedName string
	if len(pl.Axes) == 2 {
		fixedName = pl.Axes[0].Name
		fixedVals = pl.Axes[0].Values
	} else {
		fixedVals = []int{0}
	}
	for _, p := range pl.Points {
		k := 0
		if fixedName != "" {
			k = p.Params[fixedName]
		}
		groups[k] = append(groups[k], p)
	}
	var out []Knee
	for _, fv := range fixedVals {
		k := Knee{Axis: along.Name}
		if fixedName != "" {
			k.Fixed = map[string]int{fixedName: fv}
		}
		pts := groups[fv]
		if along.Name == "workers" {
			// The largest fleet such that it and every smaller swept fleet meet the objective.
			for _, p := range pts {
				if !p.MeetsObjective {
					break
				}
				k.Value = p.Params[along.Name]
			}
			k.Reason = "largest fleet meeting the objective"
		} else {
			// The smallest cap from which every larger swept cap meets the objective.
			for i := len(pts) - 1; i >= 0 && pts[i].MeetsObjective; i-- {
				k.Value = pts[i].Params[along.Name]
			}
			k.Reason = "smallest cap meeting the objective"
		}
		if k.Value == 0 {
			k.Reason = "no swept value meets the objective"
		}
		out = append(out, k)
	}
	return out
}

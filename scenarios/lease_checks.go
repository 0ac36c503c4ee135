package scenarios

// Lease checks for the lease scenarios (lease-*.yaml):
//
//   leasesHeld:      leases in a control plane's store (a cluster, optionally one holder),
//                    polled, within [atLeast, atMost] (sometime | always | never | end)
//   admitted:        guard grants to a set of workers since the window opened, polled, within
//                    [atLeast, atMost]
//   engineMax:       the peak of queries executing on a cluster inside a window (every change,
//                    not polled) within [atLeast, atMost]: shows what a policy lets through
//   expectViolation: an oracle (engineWithinCap, leasesWithinCap) must have FAILED: proof that
//                    the oracle can fail when a scenario turns a safety mechanism off
//   fairness:        Jain's index of the per-worker admitted share, at least min
//   admittedRatio:   grants to one set of workers over grants to another inside a window,
//                    within [min, max]: shows coordination.weights at work

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// Bounds is an inclusive range of counts; a nil end is open.
type Bounds struct {
	AtLeast *int `yaml:"atLeast"`
	AtMost  *int `yaml:"atMost"`
}

func (b Bounds) validate(p Params) error {
	if b.AtLeast == nil && b.AtMost == nil {
		return p.Errorf("give atLeast, atMost or both")
	}
	if b.AtLeast != nil && b.AtMost != nil && *b.AtLeast > *b.AtMost {
		return p.Errorf("atLeast %d > atMost %d", *b.AtLeast, *b.AtMost)
	}
	return nil
}

// Holds reports whether n is inside the bounds.
func (b Bounds) Holds(n int) bool {
	return (b.AtLeast == nil || n >= *b.AtLeast) && (b.AtMost == nil || n <= *b.AtMost)
}

func (b Bounds) String() string {
	switch {
	case b.AtLeast != nil && b.AtMost != nil:
		return fmt.Sprintf("in [%d, %d]", *b.AtLeast, *b.AtMost)
	case b.AtLeast != nil:
		return fmt.Sprintf(">= %d", *b.AtLeast)
	}
	return fmt.Sprintf("<= %d", *b.AtMost)
}

// countCheck polls a count every CheckEvery inside its window and judges it against bounds.
type countCheck struct {
	what   string
	bounds Bounds
	win    Window
	sample func(w *World) (int, bool) // false: cannot look now

	looks, hits     int
	last, min, peak int
	firstHit        time.Duration
}

func (c *countCheck) Start(w *World) {
	c.firstHit = -1
	w.Every(c.win.From, c.win.To, w.Scenario.CheckEvery, func() {
		n, ok := c.sample(w)
		if !ok {
			return
		}
		if c.looks == 0 || n < c.min {
			c.min = n
		}
		c.looks++
		c.last, c.peak = n, max(c.peak, n)
		if c.bounds.Holds(n) {
			c.hits++
			if c.firstHit < 0 {
				c.firstHit = w.Sim.Elapsed()
			}
		}
	})
}

func (c *countCheck) Result(w *World) (bool, string) {
	var pass bool
	switch c.win.Mode {
	case "sometime":
		pass = c.hits > 0
	case "always":
		pass = c.looks > 0 && c.hits == c.looks
	case "never":
		pass = c.hits == 0
	case "end":
		pass = c.looks > 0 && c.bounds.Holds(c.last)
	}
	detail := fmt.Sprintf("%s %s %s in [%v, %v]: %d/%d looks held; min %d, max %d, last %d", c.what, c.win.Mode, c.bounds,
		c.win.From, c.win.To, c.hits, c.looks, c.min, c.peak, c.last)
	if c.firstHit >= 0 {
		detail += fmt.Sprintf(", first held at %v", c.firstHit)
	}
	return pass, detail
}

// CountWindow are the window and bounds every count check shares; each kind's struct embeds
// them inline, so one strict decode reads both.
type CountWindow struct {
	From    time.Duration `yaml:"from"`
	To      time.Duration `yaml:"to"`
	Mode    string        `yaml:"mode"`
	AtLeast *int          `yaml:"atLeast"`
	AtMost  *int          `yaml:"atMost"`
}

// parseWindowBounds decodes p into v (a struct embedding common) and checks the window and
// bounds.
func parseWindowBounds(sc *Scenario, p Params, v any, common *CountWindow) (Window, Bounds, error) {
	if err := p.Decode(v); err != nil {
		return Window{}, Bounds{}, err
	}
	win := Window{From: common.From, To: common.To, Mode: common.Mode}
	if err := win.validate(sc, p); err != nil {
		return win, Bounds{}, err
	}
	b := Bounds{AtLeast: common.AtLeast, AtMost: common.AtMost}
	return win, b, b.validate(p)
}

// leasesHeld: {controlPlane: cp-1, cluster: c1, holder: w-1, atMost: 0, from: 28s, mode: always}
func parseLeasesHeld(sc *Scenario, p Params) (Check, error) {
	var c struct {
		CountWindow  `yaml:",inline"`
		ControlPlane string `yaml:"controlPlane"`
		Cluster      string `yaml:"cluster"`
		Holder       string `yaml:"holder"`
	}
	win, b, err := parseWindowBounds(sc, p, &c, &c.CountWindow)
	if err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("leasesHeld needs a workload: section")
	}
	if c.Cluster != "" && sc.Workload.Cap(c.Cluster) == 0 {
		return nil, p.Errorf("no cluster named %q", c.Cluster)
	}
	if c.ControlPlane == "" {
		cps, _ := sc.Resolve("controlPlanes")
		if len(cps) == 0 {
			return nil, p.Errorf("no control plane in the fleet")
		}
		c.ControlPlane = cps[0]
	} else if spec, ok := sc.Spec(c.ControlPlane); !ok || spec.Role != "controlplane" {
		return nil, p.Errorf("controlPlane %q is not a control plane of the fleet", c.ControlPlane)
	}
	what := fmt.Sprintf("leases on %s", c.ControlPlane)
	if c.Cluster != "" {
		what += " of cluster " + c.Cluster
	}
	if c.Holder != "" {
		what += " held by " + c.Holder
	}
	sample := func(w *World) (int, bool) {
		held, _ := LeasesOf(w).Memory.List(context.Background(), c.Cluster)
		n := 0
		for _, l := range held {
			if c.Holder == "" || capacity.HolderWorker(l.Holder) == c.Holder {
				n++
			}
		}
		return n, true
	}
	return &countCheck{what: what, bounds: b, win: win, sample: sample}, nil
}

// admitted: {workers: [w-2, w-3] as a node or group, atLeast: 1, from: 20s, to: 28s, mode: end}
// counts guard grants since the window opened.
func parseAdmitted(sc *Scenario, p Params) (Check, error) {
	var c struct {
		CountWindow `yaml:",inline"`
		Workers     string `yaml:"workers"`
	}
	win, b, err := parseWindowBounds(sc, p, &c, &c.CountWindow)
	if err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("admitted needs a workload: section")
	}
	if c.Workers == "" {
		c.Workers = "workers"
	}
	names, err := sc.Resolve(c.Workers)
	if err != nil {
		return nil, p.Errorf("workers: %v", err)
	}
	base := -1
	total := func(w *World) int {
		st := WorkloadOf(w)
		n := 0
		for _, name := range names {
			n += st.worker(name).Admitted
		}
		return n
	}
	sample := func(w *World) (int, bool) {
		if base < 0 {
			base = total(w)
		}
		return total(w) - base, true
	}
	return &countCheck{what: "admitted on " + c.Workers + " since the window opened", bounds: b, win: win, sample: sample}, nil
}

// engineMax: {cluster: c1, from: 20s, to: 40s, atLeast: 11, atMost: 30}: the peak of queries
// executing on the cluster inside the window, seen at every change.
type engineMax struct {
	cluster string
	bounds  Bounds
	win     Window

	cur, peak int
	open      bool // the window has opened (peak starts at the value in force then)
	when      time.Duration
}

func parseEngineMax(sc *Scenario, p Params) (Check, error) {
	var c struct {
		CountWindow `yaml:",inline"`
		Cluster     string `yaml:"cluster"`
	}
	win, b, err := parseWindowBounds(sc, p, &c, &c.CountWindow)
	if err != nil {
		return nil, err
	}
	if sc.Workload == nil || sc.Workload.Cap(c.Cluster) == 0 {
		return nil, p.Errorf("engineMax needs a workload: section and one of its clusters (got %q)", c.Cluster)
	}
	return &engineMax{cluster: c.Cluster, bounds: b, win: win}, nil
}

func (c *engineMax) Start(w *World) {
	w.Sim.At(c.win.From, func() { c.open, c.peak, c.when = true, c.cur, c.win.From }) // the value in force then
	st := WorkloadOf(w)
	st.engineWatchers = append(st.engineWatchers, func(cluster string, total int) {
		if cluster != c.cluster {
			return
		}
		if now := w.Sim.Elapsed(); c.open && now <= c.win.To && total > c.peak {
			c.peak, c.when = total, now
		}
		c.cur = total
	})
}

func (c *engineMax) Result(w *World) (bool, string) {
	peak := c.peak
	pass := c.bounds.Holds(peak)
	return pass, fmt.Sprintf("peak of queries executing on %s in [%v, %v] is %d (at %v), want %s (cap %d)",
		c.cluster, c.win.From, c.win.To, peak, c.when, c.bounds, w.Scenario.Workload.Cap(c.cluster))
}

// expectViolation: {oracle: engineWithinCap}: passes only if the oracle found a violation.
type expectViolation struct {
	oracle string
}

func parseExpectViolation(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Oracle string `yaml:"oracle"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("expectViolation needs a workload: section")
	}
	if c.Oracle != "engineWithinCap" && c.Oracle != "leasesWithinCap" {
		return nil, p.Errorf("oracle %q: engineWithinCap or leasesWithinCap", c.Oracle)
	}
	return &expectViolation{oracle: c.Oracle}, nil
}

func (c *expectViolation) Start(w *World) {}

func (c *expectViolation) Result(w *World) (bool, string) {
	st := WorkloadOf(w)
	n, peaks, what := st.EngineViolations, st.MaxExecuting, "queries executing"
	if c.oracle == "leasesWithinCap" {
		n, peaks, what = st.LeaseViolations, st.MaxLeases, "leases held"
	}
	var parts []string
	for _, cl := range w.Scenario.Workload.Clusters {
		parts = append(parts, fmt.Sprintf("%s max %d/%d", cl.Name, peaks[cl.Name], cl.Cap))
	}
	var first []string
	for _, v := range st.FirstViolations {
		if strings.Contains(v, what) {
			first = append(first, v)
		}
	}
	if n == 0 {
		return false, fmt.Sprintf("%s was expected to fail but held: %s", c.oracle, strings.Join(parts, ", "))
	}
	return true, fmt.Sprintf("%s failed as expected: %d violations; %s; first: %s", c.oracle, n, strings.Join(parts, ", "), strings.Join(first, " | "))
}

// fairness: {min: 0.8}: Jain's index of the per-worker admitted share (admitted/submitted, or
// admitted per client when the arrivals are closed loops).
type fairness struct {
	min float64
}

func parseFairness(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Min float64 `yaml:"min"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("fairness needs a workload: section")
	}
	if c.Min < 0 || c.Min > 1 {
		return nil, p.Errorf("min %v outside [0, 1]", c.Min)
	}
	return &fairness{min: c.Min}, nil
}

func (c *fairness) Start(w *World) {}

func (c *fairness) Result(w *World) (bool, string) {
	s := WorkloadOf(w).Summary(w.Scenario)
	lo, hi := math.Inf(1), 0.0
	for _, share := range s.Shares { //determinism:ok min and max do not depend on order
		lo, hi = min(lo, share), max(hi, share)
	}
	if len(s.Shares) == 0 {
		lo = 0
	}
	return s.Fairness >= c.min, fmt.Sprintf("Jain's index %.3f (want >= %.2f) over %d workers; admitted share min %.2f max %.2f; admitted %d of %d submitted",
		s.Fairness, c.min, s.Workers, lo, hi, s.Admitted, s.Submitted)
}

// admittedRatio: {workers: w-2, over: w-1, min: 2.5, max: 3.5, from: 10s, to: 60s}: guard
// grants to workers over grants to over, counted from `from` to `to`.
type admittedRatio struct {
	AdmittedRatio

	base, end [2]int
	seen      bool
}

// AdmittedRatio is an admittedRatio check's parameters, resolved and checked; the chaos harness
// reads them too (ParseAdmittedRatio), to count the same ratio on real daemons.
type AdmittedRatio struct {
	Workers, Over []string
	What          string // "w-2 over w-1", for messages
	Min, Max      float64
	Win           Window
}

func parseAdmittedRatio(sc *Scenario, p Params) (Check, error) {
	a, err := ParseAdmittedRatio(sc, p)
	if err != nil {
		return nil, err
	}
	return &admittedRatio{AdmittedRatio: a}, nil
}

// ParseAdmittedRatio reads the parameters of an admittedRatio check of sc.
func ParseAdmittedRatio(sc *Scenario, p Params) (AdmittedRatio, error) {
	var c struct {
		Workers string        `yaml:"workers"`
		Over    string        `yaml:"over"`
		Min     float64       `yaml:"min"`
		Max     float64       `yaml:"max"`
		From    time.Duration `yaml:"from"`
		To      time.Duration `yaml:"to"`
	}
	if err := p.Decode(&c); err != nil {
		return AdmittedRatio{}, err
	}
	if sc.Workload == nil {
		return AdmittedRatio{}, p.Errorf("admittedRatio needs a workload: section")
	}
	if c.Min < 0 || (c.Max > 0 && c.Max < c.Min) || (c.Min == 0 && c.Max == 0) {
		return AdmittedRatio{}, p.Errorf("give min >= 0 and/or max >= min (got %v, %v)", c.Min, c.Max)
	}
	workers, err := sc.Resolve(c.Workers)
	if err != nil {
		return AdmittedRatio{}, p.Errorf("workers: %v", err)
	}
	over, err := sc.Resolve(c.Over)
	if err != nil {
		return AdmittedRatio{}, p.Errorf("over: %v", err)
	}
	win := Window{From: c.From, To: c.To, Mode: "end"}
	if err := win.validate(sc, p); err != nil {
		return AdmittedRatio{}, err
	}
	return AdmittedRatio{Workers: workers, Over: over, What: c.Workers + " over " + c.Over, Min: c.Min, Max: c.Max, Win: win}, nil
}

func (c *admittedRatio) count(w *World) [2]int {
	st := WorkloadOf(w)
	var n [2]int
	for _, name := range c.Workers {
		n[0] += st.worker(name).Admitted
	}
	for _, name := range c.Over {
		n[1] += st.worker(name).Admitted
	}
	return n
}

func (c *admittedRatio) Start(w *World) {
	w.Sim.At(c.Win.From, func() { c.base = c.count(w) })
	w.Sim.At(c.Win.To, func() { c.end, c.seen = c.count(w), true })
}

func (c *admittedRatio) Result(w *World) (bool, string) {
	if !c.seen {
		c.end, c.seen = c.count(w), true // the run ended before the window closed
	}
	a, b := c.end[0]-c.base[0], c.end[1]-c.base[1]
	if b == 0 {
		return false, fmt.Sprintf("admitted %s in [%v, %v]: %d over 0", c.What, c.Win.From, c.Win.To, a)
	}
	r := float64(a) / float64(b)
	pass := r >= c.Min && (c.Max == 0 || r <= c.Max)
	return pass, fmt.Sprintf("admitted %s in [%v, %v]: %d / %d = %.2f (want min %.2f, max %.2f)", c.What, c.Win.From, c.Win.To, a, b, r, c.Min, c.Max)
}

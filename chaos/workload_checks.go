package chaos

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/scenarios"
)

// planWorkloadCheck maps a workload check kind onto the real fleet ("" kind: not one).
func planWorkloadCheck(sc *scenarios.Scenario, c *scenarios.CheckSpec) (realCheck, string, bool) {
	switch c.Kind {
	case "leasesWithinCap", "engineWithinCap":
		return &capCheck{engine: c.Kind == "engineWithinCap"}, "", true
	case "served":
		var a struct {
			MinAdmitted  int           `yaml:"minAdmitted"`
			MinPerWorker int           `yaml:"minPerWorker"`
			MaxQueueP99  time.Duration `yaml:"maxQueueP99"`
			MaxLeaseLost *int          `yaml:"maxLeaseLost"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		return &servedCheck{minAdmitted: a.MinAdmitted, minPerWorker: a.MinPerWorker, maxP99: a.MaxQueueP99, maxLeaseLost: a.MaxLeaseLost}, "", true
	case "fairness":
		var a struct {
			Min float64 `yaml:"min"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		return &fairnessCheck{min: a.Min}, "", true
	case "configNeverHalfApplied":
		ch, why := planConfigWhole(c)
		return ch, why, true
	case "cacheHitRate":
		ch, why := planCacheHitRate(c)
		return ch, why, true
	case "expectViolation":
		var a struct {
			Oracle string `yaml:"oracle"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		return &expectViolationCheck{engine: a.Oracle == "engineWithinCap"}, "", true
	case "leasesHeld":
		var a struct {
			scenarios.CountWindow `yaml:",inline"`
			ControlPlane          string `yaml:"controlPlane"`
			Cluster               string `yaml:"cluster"`
			Holder                string `yaml:"holder"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		what := "leases"
		if a.Cluster != "" {
			what += " of cluster " + a.Cluster
		}
		if a.Holder != "" {
			what += " held by " + a.Holder
		}
		return newCount(sc, what, a.CountWindow, func(s *snapshot) (int, bool) {
			if s.leases == nil {
				return 0, false
			}
			n := 0
			for cl, ls := range s.leases {
				for _, l := range ls {
					if (a.Cluster == "" || cl == a.Cluster) && (a.Holder == "" || capacity.HolderWorker(l.Holder) == a.Holder) {
						n++
					}
				}
			}
			return n, true
		}), "", true
	case "admitted":
		var a struct {
			scenarios.CountWindow `yaml:",inline"`
			Workers               string `yaml:"workers"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		if a.Workers == "" {
			a.Workers = "workers"
		}
		names, err := sc.Resolve(a.Workers)
		if err != nil {
			return nil, err.Error(), true
		}
		base := -1
		return newCount(sc, "admitted on "+a.Workers+" since the window opened", a.CountWindow, func(s *snapshot) (int, bool) {
			n := 0
			for _, name := range names {
				n += s.admitted[name]
			}
			if base < 0 {
				base = n
			}
			return n - base, true
		}), "", true
	case "admittedRatio":
		a, err := scenarios.ParseAdmittedRatio(sc, c.Params)
		if err != nil {
			return nil, err.Error(), true
		}
		return &ratioCheck{AdmittedRatio: a}, "", true
	case "engineMax":
		var a struct {
			scenarios.CountWindow `yaml:",inline"`
			Cluster               string `yaml:"cluster"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		if a.To == 0 {
			a.To = sc.Duration
		}
		return &engineMaxCheck{cluster: a.Cluster, win: a.CountWindow, bounds: scenarios.Bounds{AtLeast: a.AtLeast, AtMost: a.AtMost}}, "", true
	case "historyConserved":
		var a struct {
			MaxDropped *int `yaml:"maxDropped"`
			MinStored  int  `yaml:"minStored"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, err.Error(), true
		}
		return &historyCheck{maxDropped: a.MaxDropped, minStored: a.MinStored}, "", true
	}
	return nil, "", false
}

// countCheck mirrors the simulator's polled count checks (leasesHeld, admitted) over snapshots.
type countCheck struct {
	what   string
	bounds scenarios.Bounds
	win    scenarios.Window
	sample func(*snapshot) (int, bool)

	looks, hits, last, lo, hi int
}

func newCount(sc *scenarios.Scenario, what string, cw scenarios.CountWindow, sample func(*snapshot) (int, bool)) *countCheck {
	win := scenarios.Window{From: cw.From, To: cw.To, Mode: cw.Mode}
	if win.Mode == "" {
		win.Mode = "always"
	}
	if win.To == 0 {
		win.To = sc.Duration
	}
	return &countCheck{what: what, bounds: scenarios.Bounds{AtLeast: cw.AtLeast, AtMost: cw.AtMost}, win: win, sample: sample}
}

func (c *countCheck) look(_ *scenarios.Scenario, s *snapshot) {
	if s.t < c.win.From || s.t > c.win.To {
		return
	}
	n, ok := c.sample(s)
	if !ok {
		return
	}
	if c.looks == 0 {
		c.lo = n
	}
	c.looks++
	c.last, c.lo, c.hi = n, min(c.lo, n), max(c.hi, n)
	if c.bounds.Holds(n) {
		c.hits++
	}
}

func (c *countCheck) result(*runner) (bool, string) {
	pass := scenarios.WindowPass(c.win.Mode, c.hits, c.looks, c.bounds.Holds(c.last))
	return pass, fmt.Sprintf("%s %s %s in [%v, %v]: %d/%d looks held; min %d, max %d, last %d", c.what, c.win.Mode, c.bounds,
		c.win.From, c.win.To, c.hits, c.looks, c.lo, c.hi, c.last)
}

// workloadLagBudget is how late the host may be before a workload check's leases and
// admissions are not the fleet's doing alone: the files bound a hand-off by crash + lease TTL +
// the sweep's second + 1 s, so a stall of half that last second (a lease renewed, swept or
// granted that much late, a crash applied that much late) still leaves the bound half its
// margin; a stall of 1.3 s on a loaded CI host ate all of it.
const workloadLagBudget = 500 * time.Millisecond

// workloadLag is a workload check's lag budget over [from, to]: one wake-up of the runner, or
// one health probe a worker reported, later than workloadLagBudget. The window is widened back by a lease's life and the sweep's second
// (a renewal, a kill or a grant the host delayed shows in the lease table until the lease has
// expired and been swept).
func workloadLag(sc *scenarios.Scenario, from, to time.Duration) lagBudget {
	co := sc.Workload.Coordination
	settle := cmp.Or(co.LeaseTTL, config.DefaultLeaseTTLSecs*time.Second) + cmp.Or(co.DriftMargin, config.DefaultDriftMarginSecs*time.Second) + time.Second
	// A late host delays grants, reclaims and kills: a check that passed despite it passed.
	return lagBudget{max: workloadLagBudget, what: "a workload check's margin (half the second the lease files leave over crash + lease TTL + sweep)",
		flips: 1, from: from, to: to, settle: settle, daemons: true, passHolds: true}
}

// lagBudget: leases held and admissions follow renewals, sweeps, grants and the timeline,
// every one of them a timer a late host delays.
func (c *countCheck) lagBudget(r *runner) (lagBudget, bool) {
	return workloadLag(r.sc, c.win.From, c.win.To), true
}

// ratioCheck mirrors admittedRatio: guard grants to workers over grants to over, counted from
// the first look at or after `from` to the last at or before `to`.
type ratioCheck struct {
	scenarios.AdmittedRatio

	base, end [2]int
	looks     int
}

func (c *ratioCheck) look(_ *scenarios.Scenario, s *snapshot) {
	if s.t < c.Win.From || s.t > c.Win.To {
		return
	}
	var n [2]int
	for i, names := range [][]string{c.Workers, c.Over} {
		for _, name := range names {
			n[i] += s.admitted[name]
		}
	}
	if c.looks == 0 {
		c.base = n
	}
	c.end = n
	c.looks++
}

func (c *ratioCheck) result(*runner) (bool, string) {
	a, b := c.end[0]-c.base[0], c.end[1]-c.base[1]
	if b == 0 {
		return false, fmt.Sprintf("admitted %s in [%v, %v]: %d over 0 (%d looks)", c.What, c.Win.From, c.Win.To, a, c.looks)
	}
	r := float64(a) / float64(b)
	pass := r >= c.Min && (c.Max == 0 || r <= c.Max)
	return pass, fmt.Sprintf("admitted %s in [%v, %v]: %d / %d = %.2f (want min %.2f, max %.2f)", c.What, c.Win.From, c.Win.To, a, b, r, c.Min, c.Max)
}

// capCheck: leases granted (control plane's table) or queries executing (the engines' process lists)
// never above the cap in force.
type capCheck struct{ engine bool }

func (c *capCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *capCheck) result(r *runner) (bool, string) {
	f := r.wl
	f.mu.Lock()
	defer f.mu.Unlock()
	viol, peaks, what := f.leaseViol, f.peakLease, "leases held (control plane's table, every look)"
	if c.engine {
		viol, peaks, what = f.engViol, f.peak, "queries executing (the engines' process lists every 20ms)"
	}
	var parts []string
	for _, cl := range r.sc.Workload.Clusters {
		parts = append(parts, fmt.Sprintf("%s max %d/%d", cl.Name, peaks[cl.Name], cl.Cap))
	}
	detail := fmt.Sprintf("%s within cap: %s", what, strings.Join(parts, ", "))
	if len(viol) > 0 {
		return false, detail + "; first: " + strings.Join(viol, " | ")
	}
	return true, detail
}

// capCheck has no lag budget: the cap holds whatever the timers do, so a violation on a late
// host is still a violation.

type expectViolationCheck struct {
	engine bool
	seen   bool // result found the violation
}

func (c *expectViolationCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *expectViolationCheck) result(r *runner) (bool, string) {
	pass, detail := (&capCheck{engine: c.engine}).result(r)
	c.seen = !pass
	return !pass, "expected a violation: " + detail
}

// lagBudget: a violation seen is the fleet's (the host cannot make the engine run more than
// the cap); one not seen may be the host's, which delayed the grants that would have made it.
func (c *expectViolationCheck) lagBudget(r *runner) (lagBudget, bool) {
	return workloadLag(r.sc, 0, r.sc.Duration), !c.seen
}

type servedCheck struct {
	minAdmitted, minPerWorker int
	maxP99                    time.Duration
	maxLeaseLost              *int // nil: not judged
}

func (c *servedCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *servedCheck) result(r *runner) (bool, string) {
	s := r.summary()
	pass := s.Admitted >= c.minAdmitted && (c.maxP99 == 0 || s.QueueP99Ms <= float64(c.maxP99.Milliseconds()))
	var starved []string
	for name, aw := range s.PerWorker {
		if aw[0] < c.minPerWorker {
			starved = append(starved, name)
		}
	}
	sort.Strings(starved)
	detail := s.String()
	if len(starved) > 0 {
		pass = false
		detail += fmt.Sprintf("; admitted < %d on %s", c.minPerWorker, strings.Join(starved, " "))
	}
	if c.maxLeaseLost != nil && r.wl != nil {
		lost := r.wl.leaseLost()
		pass = pass && lost <= *c.maxLeaseLost
		detail += fmt.Sprintf("; %d ended by a lost lease (at most %d)", lost, *c.maxLeaseLost)
	}
	return pass, detail
}

type fairnessCheck struct{ min float64 }

func (c *fairnessCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *fairnessCheck) result(r *runner) (bool, string) {
	s := r.summary()
	return s.Fairness >= c.min, fmt.Sprintf("Jain's index %.3f (want >= %.2f) over %d workers; admitted %d of %d submitted",
		s.Fairness, c.min, s.Workers, s.Admitted, s.Submitted)
}

// engineMaxCheck: the peak of queries executing on a cluster's engine inside the window,
// starting from the value in force when it opens (the last sample at or before its start), as
// the simulator's engineMax does: a window shorter than the sampling interval still sees one.
type engineMaxCheck struct {
	cluster string
	win     scenarios.CountWindow
	bounds  scenarios.Bounds
	peak    int
	when    time.Duration
	cur     int  // the last sample before the window opened
	open    bool // a sample at or after its start was seen
	added   bool
}

func (c *engineMaxCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *engineMaxCheck) watch(t time.Duration, cluster string, n int) {
	if cluster != c.cluster {
		return
	}
	if t <= c.win.From {
		c.cur = n
	}
	if t >= c.win.From && !c.open {
		c.open, c.peak, c.when = true, c.cur, c.win.From
	}
	if c.open && t <= c.win.To && n > c.peak {
		c.peak, c.when = n, t
	}
}

// lagBudget: a peak over atMost is the fleet's whatever the host did (see capCheck); a peak
// under atLeast, or a pass, rests on grants and kills a late host delays.
func (c *engineMaxCheck) lagBudget(r *runner) (lagBudget, bool) {
	over := c.bounds.AtMost != nil && c.peak > *c.bounds.AtMost
	return workloadLag(r.sc, c.win.From, c.win.To), !over
}

func (c *engineMaxCheck) result(r *runner) (bool, string) {
	return c.bounds.Holds(c.peak), fmt.Sprintf("peak of queries executing on %s (its process list) in [%v, %v] is %d (at %v), want %s (cap %d)",
		c.cluster, c.win.From, c.win.To, c.peak, c.when.Round(time.Millisecond), c.bounds, r.sc.Workload.Cap(c.cluster))
}

// historyCheck: every query a worker finished is stored in the control planes' database, or
// counted dropped by that worker's uplink, or still pending in it; only a worker that was
// killed may have lost records (its buffer). Query ids are the table's primary key, so none is
// stored twice. From outside, a worker's ids are not visible, so this is per-worker counts.
type historyCheck struct {
	maxDropped *int
	minStored  int
}

func (c *historyCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *historyCheck) result(r *runner) (bool, string) {
	h := r.history
	if h.err != nil {
		return false, "reading history: " + h.err.Error()
	}
	var problems, parts []string
	stored, dropped, lost := 0, 0, 0
	for _, w := range workerNames(r.sc) {
		fin := r.wl.finished[w]
		missing := fin - h.stored[w] - h.dropped[w] - h.pending[w]
		stored, dropped = stored+h.stored[w], dropped+h.dropped[w]
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d/%d", w, fin, h.stored[w], h.dropped[w], h.pending[w]))
		switch {
		case missing > 0 && r.wl.crashes[w] == 0:
			problems = append(problems, fmt.Sprintf("%s: %d finished queries neither stored, dropped nor pending, and it never crashed", w, missing))
		case missing > 0:
			lost += missing
		case missing < 0:
			problems = append(problems, fmt.Sprintf("%s: %d more stored, dropped or pending than its clients saw finish", w, -missing))
		}
	}
	if stored < c.minStored {
		problems = append(problems, fmt.Sprintf("stored %d < %d", stored, c.minStored))
	}
	if c.maxDropped != nil && dropped > *c.maxDropped {
		problems = append(problems, fmt.Sprintf("dropped %d > %d", dropped, *c.maxDropped))
	}
	detail := fmt.Sprintf("stored %d, dropped %d, lost in killed workers' buffers %d (finished/stored/dropped/pending: %s)",
		stored, dropped, lost, strings.Join(parts, ", "))
	if len(problems) > 0 {
		return false, detail + ": " + strings.Join(problems, "; ")
	}
	return true, detail
}

func workerNames(sc *scenarios.Scenario) []string {
	names, _ := sc.Resolve("workers")
	return names
}

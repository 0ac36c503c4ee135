package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/scenarios"
)

// snapshot is one look at the real fleet: each control plane's worker list (absent while it is
// down) and, when a check needs it, each worker's own status.
type snapshot struct {
	t        time.Duration // scenario time
	cpUp     map[string]bool
	registry map[string]map[string]workerapi.WorkerInfo // control plane -> worker -> info
	health   map[string]string                          // worker -> its own health state
	config   map[string]workerConfigState               // worker -> its active config (config section)
	leases   map[string][]capacity.Lease                // cluster -> leases (workload; nil: no control plane answered)
	admitted map[string]int                             // worker -> guard grants so far (workload)
	running  map[string]bool                            // worker -> its process runs
	routing  map[string][]string                        // user -> the clusters the files route it to, read after registry (workload)
	// cpMetrics is each answering control plane's /metrics, when a check reads it.
	cpMetrics map[string]string
}

// realCheck is a check read from the daemons.
type realCheck interface {
	look(sc *scenarios.Scenario, s *snapshot)
	result(r *runner) (bool, string)
}

type stateParams struct {
	Worker           string `yaml:"worker"`
	State            string `yaml:"state"`
	scenarios.Window `yaml:",inline"`
}

// planCheck maps a check to a real one, or says why chaos cannot read it.
func planCheck(sc *scenarios.Scenario, c *scenarios.CheckSpec) (realCheck, bool, string) {
	if sc.Workload != nil {
		if ch, why, ok := planWorkloadCheck(sc, c); ok {
			return ch, false, why
		}
	}
	switch c.Kind {
	case "registryState", "reportedHealth", "selfHealth":
		var sp stateParams
		if err := c.Params.Decode(&sp); err != nil {
			return nil, false, err.Error()
		}
		if sp.Mode == "" {
			sp.Mode = "sometime"
		}
		if sp.To == 0 {
			sp.To = sc.Duration
		}
		names, err := sc.Resolve(sp.Worker)
		if err != nil {
			return nil, false, err.Error()
		}
		return newStateCheck(c.Kind, names, sp.State, sp.Window), c.Kind == "selfHealth", ""
	case "configStatus":
		if sc.Config == nil {
			return nil, false, "configStatus without a config: section"
		}
		ch, why := planConfigStatus(sc, c)
		return ch, true, why
	case "groupsServed", "revisionConverged", "revisionChange", "selectorUnmatched":
		if sc.Config == nil || !sc.Config.Zones {
			return nil, false, c.Kind + " without config: {zones: true}"
		}
		ch, why := planLabelCheck(sc, c)
		return ch, false, why
	case "tokenRevoked":
		var a struct {
			Worker string        `yaml:"worker"`
			At     time.Duration `yaml:"at"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, false, err.Error()
		}
		return &tokenRevokedCheck{worker: a.Worker, at: a.At}, false, ""
	case "reregistered":
		var a struct {
			Worker           string `yaml:"worker"`
			scenarios.Window `yaml:",inline"`
		}
		if err := c.Params.Decode(&a); err != nil {
			return nil, false, err.Error()
		}
		if a.To == 0 {
			a.To = sc.Duration
		}
		return &reregisteredCheck{worker: a.Worker, win: a.Window}, false, ""
	}
	return nil, false, fmt.Sprintf("check kind %q is not supported in chaos", c.Kind)
}

// stateCheck mirrors scenarios.StateCheck over snapshots.
type stateCheck struct {
	kind  string
	names []string
	want  string
	win   scenarios.Window

	hits, looks map[string]int
	first       map[string]time.Duration
	last        map[string]string
	// after is, for a sometime check, when a worker first showed the wanted state after the
	// window (it never did inside): a late host delays a state, and hostVerdict asks whether
	// the time it lost explains the delay.
	after map[string]time.Duration

	probeFn func(s *snapshot, name string) (string, bool) // a kind of its own (configStatus)
}

func newStateCheck(kind string, names []string, want string, win scenarios.Window) *stateCheck {
	return &stateCheck{kind: kind, names: names, want: want, win: win,
		hits: map[string]int{}, looks: map[string]int{}, first: map[string]time.Duration{}, last: map[string]string{},
		after: map[string]time.Duration{}}
}

func (c *stateCheck) probe(sc *scenarios.Scenario, s *snapshot, name string) (string, bool) {
	if c.probeFn != nil {
		return c.probeFn(s, name)
	}
	cp := sc.ControlPlaneOf(name)
	switch c.kind {
	case "selfHealth":
		v, ok := s.health[name]
		return v, ok
	case "registryState":
		if !s.cpUp[cp] {
			return "", false
		}
		info, known := s.registry[cp][name]
		if !known {
			return "unknown", true
		}
		return info.State, true
	default: // reportedHealth
		info, known := s.registry[cp][name]
		if !s.cpUp[cp] || !known || info.Heartbeat == nil {
			return "", false
		}
		return info.Heartbeat.Health.State, true
	}
}

func (c *stateCheck) look(sc *scenarios.Scenario, s *snapshot) {
	if s.t > c.win.To && c.win.Mode == "sometime" {
		for _, name := range c.names {
			if _, seen := c.after[name]; !seen && c.hits[name] == 0 {
				if v, ok := c.probe(sc, s, name); ok && v == c.want {
					c.after[name] = s.t
				}
			}
		}
	}
	if s.t < c.win.From || s.t > c.win.To {
		return
	}
	for _, name := range c.names {
		v, ok := c.probe(sc, s, name)
		if !ok {
			continue
		}
		c.looks[name]++
		c.last[name] = v
		if v == c.want {
			c.hits[name]++
			if _, seen := c.first[name]; !seen {
				c.first[name] = s.t
			}
		}
	}
}

func (c *stateCheck) result(r *runner) (bool, string) {
	pass := true
	var parts []string
	for _, name := range c.names {
		hits, looks := c.hits[name], c.looks[name]
		pass = pass && scenarios.WindowPass(c.win.Mode, hits, looks, c.last[name] == c.want)
		desc := fmt.Sprintf("%s: %d/%d looks %s", name, hits, looks, c.want)
		if f, seen := c.first[name]; seen {
			desc += " (first at " + f.Round(time.Millisecond).String() + ")"
		}
		desc += ", last " + c.last[name]
		parts = append(parts, desc)
	}
	what := map[string]string{"registryState": "registry state", "reportedHealth": "reported health", "selfHealth": "self health", "configStatus": "config"}[c.kind]
	return pass, fmt.Sprintf("%s %s %q in [%v, %v]: %s", what, c.win.Mode, c.want, c.win.From, c.win.To, strings.Join(parts, "; "))
}

// configLagBudget is how late the host may be before a configStatus check is not the fleet's
// doing: an edit reaches every worker in 0.1-0.2 s on a quiet host (the admin PUT, the
// long-poll), and the files look 2 s after a change (an edit at 9 s, "as wanted" from 11 s).
// A stall of a second inside those 2 s left a config-bad-smoke edit 2.7 s to arrive.
const configLagBudget = time.Second

// lagBudget: a worker's health flips after healthFlips probes in a row later than the lag
// threshold, and flips back after as many on time; the control plane hears it with the next
// heartbeat. A registry state changes when one heartbeat is more than staleAfter less the
// heartbeat interval late (evicted: evictGrace more): the runner's timer, or a worker's own
// probe that it reported that late (its heartbeat timer was kept waiting alike).
func (c *stateCheck) lagBudget(r *runner) (lagBudget, bool) {
	b, ok := c.stateLagBudget(r)
	// A late host takes health away and never gives it: a worker seen healthy as wanted was.
	b.passHolds = c.want == workerapi.StateHealthy && c.win.Mode != "never"
	return b, ok
}

func (c *stateCheck) stateLagBudget(r *runner) (lagBudget, bool) {
	iv := r.intervals()
	flipped := time.Duration(iv.healthFlips) * iv.healthProbe
	const health = "lag threshold the workers judge their own health by"
	switch {
	case c.kind == "selfHealth":
		return lagBudget{iv.lagThreshold, health, iv.healthFlips, iv.healthProbe, c.win.From, c.win.To, flipped, c.names, false, false}, true
	case c.kind == "reportedHealth":
		return lagBudget{iv.lagThreshold, health, iv.healthFlips, iv.healthProbe, c.win.From, c.win.To, flipped + iv.heartbeat, c.names, false, false}, true
	case c.kind == "registryState" && c.want == workerapi.StateEvicted:
		return lagBudget{iv.staleAfter + iv.evictGrace - iv.heartbeat, "a heartbeat may be late before its worker is evicted (staleAfter and evictGrace less the heartbeat interval)",
			1, 0, c.win.From, c.win.To, iv.staleAfter + iv.evictGrace, nil, true, false}, true
	case c.kind == "registryState":
		return lagBudget{iv.staleAfter - iv.heartbeat, "a heartbeat may be late before its worker is stale (staleAfter less the heartbeat interval)",
			1, 0, c.win.From, c.win.To, iv.staleAfter, nil, true, false}, true
	case c.kind == "configStatus":
		// A late host delays a change, it does not undo one: only the lead up to the window counts.
		return lagBudget{configLagBudget, "half of the 2 s the config files give a change before they look", 1, 0, c.win.From, c.win.From, 2 * configLagBudget, nil, false, false}, true
	}
	return lagBudget{}, false
}

// cameLate reports whether every worker that never showed the wanted state inside the window
// showed it after, and no later than the host's lost time explains: the scenario time the
// runner's own timer lost from `from` (real) to when the state came, taken off when it came,
// puts it inside the window. It names the latest such worker.
func (c *stateCheck) cameLate(r *runner, from time.Time) (detail string, ok bool) {
	if c.win.Mode != "sometime" {
		return "", false
	}
	for _, name := range c.names {
		if c.hits[name] > 0 {
			continue
		}
		at, seen := c.after[name]
		if !seen {
			return "", false
		}
		lost := time.Duration(float64(r.lag.lost(from, r.t0.Add(r.scale(at)))) / r.opts.TimeScale)
		if at-lost > c.win.To {
			return "", false
		}
		detail = fmt.Sprintf("%s showed %q at %v, after the window; the runner's own timer lost %v (scenario time) before then",
			name, c.want, at.Round(time.Millisecond), lost.Round(time.Millisecond))
	}
	return detail, detail != ""
}

// tokenRevokedCheck sends, at `at`, a heartbeat with the last session token the worker's link
// carried straight to its control plane and wants 401.
type tokenRevokedCheck struct {
	worker string
	at     time.Duration
	had    bool
	status int
	err    error
}

func (c *tokenRevokedCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *tokenRevokedCheck) probe(r *runner) {
	token := r.links[c.worker].log.last(c.at)
	c.had = token != ""
	if c.had {
		c.status, c.err = r.heartbeatWith(r.sc.ControlPlaneOf(c.worker), token)
	}
}

func (c *tokenRevokedCheck) result(r *runner) (bool, string) {
	switch {
	case !c.had:
		return false, fmt.Sprintf("%s's link never carried a heartbeat before %v", c.worker, c.at)
	case c.err != nil:
		return false, fmt.Sprintf("probe at %v: %v", c.at, c.err)
	}
	return c.status == 401, fmt.Sprintf("heartbeat with %s's old token at %v answered %d (want 401)", c.worker, c.at, c.status)
}

// reregisteredCheck: the worker's link carried a heartbeat with a new session token inside the
// window, after an earlier one.
type reregisteredCheck struct {
	worker string
	win    scenarios.Window
}

func (c *reregisteredCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *reregisteredCheck) result(r *runner) (bool, string) {
	at := r.links[c.worker].log.times()
	var times []string
	pass := false
	for i, t := range at {
		times = append(times, t.Round(time.Millisecond).String())
		if i > 0 && t >= c.win.From && t <= c.win.To {
			pass = true
		}
	}
	return pass, fmt.Sprintf("%s's session tokens first seen at [%s]; want a new one in [%v, %v]",
		c.worker, strings.Join(times, " "), c.win.From, c.win.To)
}

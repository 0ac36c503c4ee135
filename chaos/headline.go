package chaos

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/scenarios"
)

// observer records what the headline metrics need, the same way for the simulated and the real
// run: each worker's registry state changes, and every heartbeat the control plane received
// (a new lastHeartbeat), all in scenario time.
type observer struct {
	states  map[string][]stateAt
	health  map[string][]stateAt // the self-health the control plane last heard, "health:<state>"
	beats   map[string][]time.Duration
	lastHB  map[string]time.Time
	tokens  map[string][]time.Duration // when each new session token was first accepted/seen
	caps    map[string][]capAt         // each worker's active config cap (config section)
	history *[2]int                    // records stored and dropped (simulated run with an uplink)
	// applied is when the real run applied each timeline event: a runner the host keeps waiting
	// applies it after its time, and what the fleet does after it counts from then. The
	// simulator applies every event on time.
	applied map[*scenarios.Event]time.Duration
	// windows are the scenario times each wait after an event ran between, by metric name.
	windows map[string][2]time.Duration
}

// at is when ev was applied.
func (o *observer) at(ev *scenarios.Event) time.Duration {
	if t, ok := o.applied[ev]; ok {
		return t
	}
	return ev.At
}

type stateAt struct {
	t     time.Duration
	state string
	beat  time.Duration // the last heartbeat the registry had when it entered state
	beats bool          // beat is known
}

type capAt struct {
	t   time.Duration
	cap int // 0: no config this run published
}

// lookConfig records a worker's active cap.
func (o *observer) lookConfig(t time.Duration, name string, c int) {
	if s := o.caps[name]; len(s) == 0 || s[len(s)-1].cap != c {
		o.caps[name] = append(s, capAt{t, c})
	}
}

// capActive is when worker first ran cap c at or after `after`.
func (o *observer) capActive(name string, c int, after time.Duration) (time.Duration, bool) {
	for i, s := range o.caps[name] {
		if s.cap == c && (s.t >= after || i+1 == len(o.caps[name]) || o.caps[name][i+1].t > after) {
			return max(s.t, after), true
		}
	}
	return 0, false
}

func newObserver() *observer {
	return &observer{states: map[string][]stateAt{}, health: map[string][]stateAt{}, beats: map[string][]time.Duration{},
		lastHB: map[string]time.Time{}, tokens: map[string][]time.Duration{}, caps: map[string][]capAt{},
		windows: map[string][2]time.Duration{}}
}

// look records one view of a worker; since maps a control plane timestamp to scenario time.
func (o *observer) look(t time.Duration, name string, info workerapi.WorkerInfo, known bool, since func(time.Time) time.Duration) {
	state := "unknown"
	if known {
		state = info.State
	}
	if s := o.states[name]; len(s) == 0 || s[len(s)-1].state != state {
		// The registry says when it entered the state and which heartbeat it had last: a
		// look that comes late, or a beat that lands just after a fault starts, changes neither.
		at := stateAt{t: t, state: state}
		if known && !info.StateSince.IsZero() {
			at.t = since(info.StateSince)
		}
		if known && !info.LastHeartbeat.IsZero() {
			at.beat, at.beats = since(info.LastHeartbeat), true
		}
		o.states[name] = append(s, at)
	}
	if known && info.Heartbeat != nil {
		h := "health:" + info.Heartbeat.Health.State
		if s := o.health[name]; len(s) == 0 || s[len(s)-1].state != h {
			o.health[name] = append(s, stateAt{t: t, state: h})
		}
	}
	if known && !info.LastHeartbeat.IsZero() && !info.LastHeartbeat.Equal(o.lastHB[name]) {
		o.lastHB[name] = info.LastHeartbeat
		o.beats[name] = append(o.beats[name], since(info.LastHeartbeat))
	}
}

func (o *observer) firstState(name, state string, after time.Duration) (stateAt, bool) {
	for _, s := range o.states[name] {
		if s.t >= after && s.state == state {
			return s, true
		}
	}
	return stateAt{}, false
}

func (o *observer) firstHealth(name, state string, after time.Duration) (time.Duration, bool) {
	for _, s := range o.health[name] {
		if s.t >= after && s.state == "health:"+state {
			return s.t, true
		}
	}
	return 0, false
}

func (o *observer) lastBeat(name string, before time.Duration) (time.Duration, bool) {
	t, ok := time.Duration(0), false
	for _, b := range o.beats[name] {
		if b <= before {
			t, ok = b, true
		}
	}
	return t, ok
}

// Metric is one headline figure of the simulated and the real run, in scenario units.
type Metric struct {
	Name    string  `json:"name"`
	Unit    string  `json:"unit"`
	Sim     float64 `json:"sim"`
	Real    float64 `json:"real"`
	DiffPct float64 `json:"diff_pct"` // (real - sim) / sim, in %
	Agree   bool    `json:"agree"`    // by Rule
	Rule    string  `json:"rule"`
	Missing string  `json:"missing,omitempty"`
	// Inconclusive says why a disagreement is the host's doing (hostMetrics): the metric was not
	// tested.
	Inconclusive string `json:"inconclusive,omitempty"`
}

// Tolerance is the largest relative difference that counts as agreement.
const Tolerance = 0.20

// headline derives the metrics from the observations, keyed by the scenario's timeline: after a
// worker crashes, stops or is partitioned, how long after its last heartbeat it turned stale and
// evicted; after a heal or restart, how long until it had a new session; and the run's totals.
func headline(sc *scenarios.Scenario, o *observer) map[string]float64 {
	m := map[string]float64{}
	role := func(n string) string { s, _ := sc.Spec(n); return s.Role }
	for _, ev := range sc.Timeline {
		var workers []string
		switch ev.Kind {
		case "crash", "restart", "stop", "partition", "heal", "starve":
			workers = eventWorkers(sc, ev)
		}
		for _, w := range workers {
			if role(w) != "worker" {
				continue
			}
			switch ev.Kind {
			case "crash", "stop", "partition":
				if _, ok := o.lastBeat(w, ev.At); !ok {
					continue
				}
				for _, st := range []string{workerapi.StateStale, workerapi.StateEvicted} {
					if s, ok := o.firstState(w, st, ev.At); ok && s.beats {
						// A wait the control plane's timers and the runner's looks time: a
						// late host lengthens it (hostMetrics).
						name := fmt.Sprintf("%s %s after last heartbeat (%s@%v)", w, st, ev.Kind, ev.At)
						m[name], o.windows[name] = (s.t - s.beat).Seconds(), [2]time.Duration{s.beat, s.t}
					}
				}
			case "starve":
				var st struct {
					For time.Duration `yaml:"for"`
				}
				_ = ev.Params.Decode(&st)
				if t, ok := o.firstHealth(w, "unhealthy", o.at(ev)); ok {
					m[fmt.Sprintf("%s reported unhealthy after starve@%v", w, ev.At)] = (t - o.at(ev)).Seconds()
				}
				if end := o.at(ev) + st.For; st.For > 0 {
					if t, ok := o.firstHealth(w, "healthy", end); ok {
						m[fmt.Sprintf("%s reported healthy after starve@%v ends", w, ev.At)] = (t - end).Seconds()
					}
				}
			case "heal", "restart":
				for _, t := range o.tokens[w] {
					if t >= o.at(ev) {
						name := fmt.Sprintf("%s new session after %s@%v", w, ev.Kind, ev.At)
						m[name], o.windows[name] = (t - o.at(ev)).Seconds(), [2]time.Duration{o.at(ev), t}
						break
					}
				}
			}
		}
	}
	configHeadline(sc, o, m)
	beats, evictions := 0, 0
	for _, b := range o.beats {
		beats += len(b)
	}
	for _, s := range o.states {
		for _, st := range s {
			if st.state == workerapi.StateEvicted {
				evictions++
			}
		}
	}
	m["heartbeats received (all workers)"] = float64(beats)
	m["evictions"] = float64(evictions)
	return m
}

// eventWorkers are the nodes an event names (a link event: both ends).
func eventWorkers(sc *scenarios.Scenario, ev *scenarios.Event) []string {
	var target string
	if ev.Params.Decode(&target) == nil && target != "" {
		names, _ := sc.Resolve(target)
		return names
	}
	var lp struct {
		Node                 string        `yaml:"node"`
		Grace                time.Duration `yaml:"grace"`
		Delay                time.Duration `yaml:"delay"`
		For                  time.Duration `yaml:"for"`
		scenarios.LinkParams `yaml:",inline"`
	}
	if ev.Params.Decode(&lp) != nil {
		return nil
	}
	var out []string
	for _, t := range []string{lp.Node, lp.From, lp.To} {
		if t == "" {
			continue
		}
		names, _ := sc.Resolve(t)
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if ev.Kind == "heal" && len(out) == 0 {
		out, _ = sc.Resolve("workers")
	}
	return out
}

// mean averages metrics over runs (each key over the runs that have it).
func mean(runs []map[string]float64) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, m := range runs {
		for k, v := range m {
			sum[k] += v
			n[k]++
		}
	}
	for k := range sum {
		sum[k] /= float64(n[k])
	}
	return sum
}

// phaseBound is the agreement rule of "new session after" metrics: the wait is the phase of
// the worker's heartbeat timer (uniform in one jittered interval, plus a request timeout while a
// beat is lost in the partition), so one real sample is compared with that bound, not with a
// percentage.
func phaseBound(sc *scenarios.Scenario) time.Duration {
	iv := sc.Intervals
	hb := iv.Heartbeat
	if hb == 0 {
		hb = 10 * time.Second
	}
	rt := iv.RequestTimeout
	if rt == 0 {
		rt = 5 * time.Second
	}
	return hb + hb/10 + rt
}

// compare pairs the simulated and real metrics.
func compare(sc *scenarios.Scenario, sim, real map[string]float64) []Metric {
	var names []string
	for n := range sim {
		names = append(names, n)
	}
	for n := range real {
		if _, ok := sim[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []Metric
	for _, n := range names {
		s, sok := sim[n]
		r, rok := real[n]
		m := Metric{Name: n, Unit: metricUnit(n), Sim: s, Real: r, Rule: fmt.Sprintf("within %.0f%%", Tolerance*100)}
		bound := phaseBound(sc).Seconds()
		phased := strings.Contains(n, "new session after")
		if phased {
			m.Rule = fmt.Sprintf("within %.0f%%, or both <= %gs (timer phase)", Tolerance*100, bound)
		}
		switch {
		case !sok:
			m.Missing = "not seen in the simulation"
		case !rok:
			m.Missing = "not seen in the real run"
		case s == 0 && r == 0:
			m.Agree = true
		case s == 0:
			m.DiffPct = math.Inf(1)
		default:
			m.DiffPct = (r - s) / s * 100
			m.Agree = math.Abs(m.DiffPct) <= Tolerance*100
		}
		if phased && sok && rok {
			m.Agree = m.Agree || (s <= bound && r <= bound)
		}
		// Both runs see a config change only when they look (every checkEvery, or the
		// real run's 20 ms floor): a difference of one look is no disagreement.
		if look := max(sc.CheckEvery, 20*time.Millisecond).Seconds(); strings.HasPrefix(n, mConfigActive) {
			m.Rule = fmt.Sprintf("within %.0f%%, or within one look (%gs)", Tolerance*100, look)
			m.Agree = m.Agree || (sok && rok && math.Abs(r-s) <= look+1e-9)
		}
		out = append(out, m)
	}
	return out
}

// ---- the simulated side: an observer run beside the file's checks ----

type simHeadline struct{ o *observer }

func (h *simHeadline) Start(w *scenarios.World) {
	sc := w.Scenario
	var workers []string
	for _, s := range sc.Nodes() {
		if s.Role == "worker" {
			workers = append(workers, s.Name)
		}
	}
	w.Every(0, sc.Duration, sc.CheckEvery, func() {
		now := w.Sim.Elapsed()
		epoch := w.Observer.Env().Now().Add(-now)
		since := func(t time.Time) time.Duration { return t.Sub(epoch) }
		for _, name := range workers {
			cp, _ := w.Role(sc.ControlPlaneOf(name)).(*controlplane.ControlPlane)
			if cp == nil {
				continue
			}
			info, known := cp.Worker(name)
			h.o.look(now, name, info, known, since)
		}
		if sc.Config != nil {
			for _, name := range workers {
				if wk, _ := scenarios.Assembled(w, name).(*assembly.Worker); wk != nil && wk.Sync != nil {
					c := 0
					if cfg, _ := wk.Sync.Active(); cfg != nil && len(cfg.Clusters) > 0 {
						c = cfg.Clusters[0].MaxRunningQueries
					}
					h.o.lookConfig(now, name, c)
				}
			}
		}
	})
}

func (h *simHeadline) Result(w *scenarios.World) (bool, string) {
	for _, s := range w.Scenario.Nodes() {
		if s.Role == "worker" {
			log := w.Durable("tokens/"+s.Name, func() any { return &scenarios.TokenLog{} }).(*scenarios.TokenLog)
			h.o.tokens[s.Name] = append([]time.Duration(nil), log.At...)
		}
	}
	h.o.history = simHistory(w)
	return true, "headline observations"
}

// runSim runs the scenario in the simulator with the headline observer beside its checks.
func runSim(sc *scenarios.Scenario, seed uint64) (*scenarios.Result, *observer) {
	o := newObserver()
	res := scenarios.Run(sc, seed, scenarios.RunOpts{Observe: []scenarios.Check{&simHeadline{o: o}}})
	return res, o
}

// configHeadline: after each configSet of the config section, how long until every worker ran
// the new cap (the edit-to-active time of the fleet; absent when some worker never did).
func configHeadline(sc *scenarios.Scenario, o *observer, m map[string]float64) {
	if sc.Config == nil {
		return
	}
	for _, ev := range sc.Timeline {
		if ev.Kind != "configSet" || hasCluster(ev) {
			continue
		}
		var a struct {
			Cap int `yaml:"cap"`
		}
		if ev.Params.Decode(&a) != nil {
			continue
		}
		var last time.Duration
		all := true
		for _, s := range sc.Nodes() {
			if s.Role != "worker" {
				continue
			}
			t, ok := o.capActive(s.Name, a.Cap, o.at(ev))
			all = all && ok
			last = max(last, t)
		}
		if all {
			m[fmt.Sprintf("%s (configSet@%v)", mConfigActive, ev.At)] = (last - o.at(ev)).Seconds()
		}
	}
}

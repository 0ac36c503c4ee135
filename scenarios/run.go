package scenarios

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// ObserverName is the node every world has for probes: it serves nothing.
const ObserverName = "observer"

var builtinGroups = map[string]bool{"all": true, "workers": true, "controlPlanes": true}

// Nodes returns the fleet's node specs in file order (roles set, prefixes expanded).
func (sc *Scenario) Nodes() []NodeSpec { return sc.specs }

// Workers is how many of the fleet's nodes are workers, whichever list names them.
func (sc *Scenario) Workers() int {
	n := 0
	for _, s := range sc.Nodes() {
		if s.Role == "worker" {
			n++
		}
	}
	return n
}

// Spec returns the spec of the node named name.
func (sc *Scenario) Spec(name string) (NodeSpec, bool) {
	i, ok := sc.specIndex[name]
	if !ok {
		return NodeSpec{}, false
	}
	return sc.specs[i], true
}

// Resolve turns a node name, a fleet group, or a built-in group (all, workers, controlPlanes)
// into node names in fleet order.
func (sc *Scenario) Resolve(target string) ([]string, error) {
	specs := sc.Nodes()
	var out []string
	switch target {
	case "all":
		for _, s := range specs {
			out = append(out, s.Name)
		}
	case "workers", "controlPlanes":
		role := map[string]string{"workers": "worker", "controlPlanes": "controlplane"}[target]
		for _, s := range specs {
			if s.Role == role {
				out = append(out, s.Name)
			}
		}
	default:
		if members, ok := sc.Fleet.Groups[target]; ok {
			return slices.Clone(members), nil
		}
		if _, ok := sc.Spec(target); ok {
			return []string{target}, nil
		}
		var groups []string
		for g := range sc.Fleet.Groups {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		return nil, fmt.Errorf("no node or group named %q (groups: all, workers, controlPlanes %s)", target, strings.Join(groups, " "))
	}
	return out, nil
}

// ControlPlaneOf is the control plane a worker talks to: its spec's, else the first one.
func (sc *Scenario) ControlPlaneOf(worker string) string {
	if s, ok := sc.Spec(worker); ok && s.ControlPlane != "" {
		return s.ControlPlane
	}
	for _, s := range sc.Nodes() {
		if s.Role == "controlplane" {
			return s.Name
		}
	}
	return ""
}

func (sc *Scenario) linkModel() (sim.Link, error) {
	l := sim.DefaultLink
	if n := sc.Network; n.Latency != nil {
		switch lat := n.Latency; lat.Dist {
		case "fixed":
			l.Latency = sim.Fixed(lat.Min)
		case "uniform":
			if lat.Max < lat.Min {
				return l, fmt.Errorf("network.latency: max %v < min %v", lat.Max, lat.Min)
			}
			l.Latency = sim.Uniform(lat.Min, lat.Max)
		case "exponential":
			l.Latency = sim.Exponential(lat.Min, lat.Mean)
		default:
			return l, fmt.Errorf("network.latency.dist: %q is not fixed, uniform or exponential", lat.Dist)
		}
	}
	if sc.Network.Drop < 0 || sc.Network.Drop >= 1 {
		return l, fmt.Errorf("network.drop: %v is not in [0, 1)", sc.Network.Drop)
	}
	l.Drop = sc.Network.Drop
	return l, nil
}

// World is one run of a scenario: the simulator, the nodes, and what roles and checks share.
type World struct {
	Sim      *sim.Sim
	Scenario *Scenario
	Seed     uint64
	Observer *sim.Node

	roles   map[string]roleEntry
	durable map[string]any
	errs    []string
	opts    RunOpts
	// stopLoad stops the workload's clients, node by node, for the end-of-run oracle.
	stopLoad []func()
	// closers release what the run set up outside itself, when it ends.
	closers []func()
}

// Node is the simulated node named name (nil if none).
func (w *World) Node(name string) *sim.Node { return w.Sim.Node(name) }

type roleEntry struct {
	obj any
	inc uint64
}

// SetRole publishes the role object of a node's current incarnation (its factory calls it).
func (w *World) SetRole(node string, role any) {
	w.roles[node] = roleEntry{obj: role, inc: w.Node(node).Incarnation()}
}

// Role is the role object of the node's running incarnation, or nil while the node is down or
// still booting (a crashed node's memory is gone).
func (w *World) Role(node string) any {
	n := w.Node(node)
	r, ok := w.roles[node]
	if n == nil || !ok || !n.Up() || r.inc != n.Incarnation() {
		return nil
	}
	return r.obj
}

// Durable returns the value kept under key across restarts, making it with mk the first time
// (a role's durable store, a recorder of what checks need).
func (w *World) Durable(key string, mk func() any) any {
	v, ok := w.durable[key]
	if !ok {
		v = mk()
		w.durable[key] = v
	}
	return v
}

// close runs the closers, last first.
func (w *World) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// Errorf records a failure of the timeline or of a check's machinery; the run fails.
func (w *World) Errorf(format string, args ...any) {
	msg := fmt.Sprintf("at %v: %s", w.Sim.Elapsed(), fmt.Sprintf(format, args...))
	w.errs = append(w.errs, msg)
	w.Sim.Record("error", msg)
}

// Every calls fn in the runner every d of virtual time from `from` to `to` (inclusive).
func (w *World) Every(from, to, d time.Duration, fn func()) {
	var tick func()
	at := from
	tick = func() {
		fn()
		at += d
		if at <= to {
			w.Sim.At(at, tick)
		}
	}
	w.Sim.At(from, tick)
}

// RunOpts tunes a run.
type RunOpts struct {
	Verbose bool
	LogOut  io.Writer
	// StallTimeout is the wall time without a task switch after which the process dies naming
	// the seed (a task blocked outside the Env). Default 60s; negative disables.
	StallTimeout time.Duration
	// PlantHistoryLoss, for tests only: every Nth query record reaching the control plane's
	// history store is acknowledged and lost without a word (a planted bug historyConserved
	// must catch).
	PlantHistoryLoss int
	// Noise perturbs the Go scheduler at every task switch (sim.Opts.Noise): the trace must not
	// change.
	Noise bool
	// PlantLeak, for tests only: every Nth query of the workload is read to its end and its
	// result stream never closed (a planted leak the end-of-run oracle must catch).
	PlantLeak int
	// PlantHalfApply, for tests only: every worker applies a revision's clusters and groups,
	// then fails to apply its routing and carries on with the routing it had (a planted bug
	// configNeverHalfApplied must catch).
	PlantHalfApply bool
	// NoSharedConfig, for tests: every worker builds its own configurations instead of sharing
	// those of workers with equal inputs (shared_config.go); the trace must not change.
	NoSharedConfig bool
	// Observe are checks run beside the file's own and left out of the result (another
	// package's observers: chaos reads the headline metrics through one). Result is called on
	// each after the run, whatever happened.
	Observe []Check
}

// CheckResult is one check's verdict.
type CheckResult struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
	// Kind names the way a failing check failed (see FailureKind), for the shrinker: a
	// variant counts as failing the same way only with the same check and kind.
	Kind string `json:"kind,omitempty"`
}

// Result is one seed's run.
type Result struct {
	Scenario  string `json:"scenario"`
	Seed      uint64 `json:"seed"`
	TraceHash string `json:"trace_hash"`
	// VirtualSeconds is all the virtual time the simulator ran: the scenario's duration and
	// then SettleSeconds, the settle of the leak check (nothingLeftOpen). WallSeconds covers
	// both, so VirtualSeconds/WallSeconds is the run's speed.
	VirtualSeconds float64 `json:"virtual_seconds"`
	// SettleSeconds is the virtual time the fleet ran after the scenario's duration, while
	// the stopped clients' last queries ended (whole seconds, at most settleMax).
	SettleSeconds float64       `json:"settle_seconds"`
	WallSeconds   float64       `json:"wall_seconds"`
	Events        uint64        `json:"events"`
	Checks        []CheckResult `json:"checks"`
	Logs          []string      `json:"-"`
	// Workload is the workload's numbers when the scenario has one.
	Workload *WorkloadSummary `json:"workload,omitempty"`
	// GrownStacks names the tasks that outgrew the 8 KB stack of their coroutine (see
	// sim.Sim.GrownStacks), one per coroutine.
	GrownStacks []string `json:"-"`
	// Invalid: the scenario did not validate (a check or a node could not be set up), so
	// nothing ran; its failures say nothing about the system.
	Invalid bool `json:"invalid,omitempty"`
}

// Pass reports whether every check passed.
func (r *Result) Pass() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return true
}

// Run runs the scenario once with seed.
func Run(sc *Scenario, seed uint64, opts RunOpts) *Result {
	wall := time.Now()
	if opts.StallTimeout == 0 {
		opts.StallTimeout = time.Minute
	}
	s := sim.New(sim.Opts{Seed: seed, Verbose: opts.Verbose, LogOut: opts.LogOut, StallTimeout: max(opts.StallTimeout, 0), Noise: opts.Noise})
	defer s.Close()
	w := &World{Sim: s, Scenario: sc, Seed: seed, roles: map[string]roleEntry{}, durable: map[string]any{}, opts: opts}
	defer w.close()
	res := &Result{Scenario: sc.Name, Seed: seed}
	fail := func(name, detail string) *Result {
		res.Invalid = true
		res.Checks = append(res.Checks, CheckResult{Name: name, Detail: detail, Kind: "invalid scenario"})
		res.TraceHash = s.TraceHash()
		res.Logs = s.Logs()
		return res
	}
	link, _ := sc.linkModel()
	s.Net().SetDefault(link)
	w.Observer = s.AddNode(ObserverName, nil)
	startEngines(w)
	for _, spec := range sc.Nodes() {
		factory, err := roleKind(spec.Role)(w, spec)
		if err != nil {
			return fail("setup", fmt.Sprintf("node %s: %v", spec.Name, err))
		}
		s.AddNode(spec.Name, factory)
	}
	for _, ev := range sc.Timeline {
		s.At(ev.At, func() {
			s.Record("event", fmt.Sprintf("%s@%v", ev.Kind, ev.At))
			if err := ev.action(w); err != nil {
				w.Errorf("%s at %v (%s): %v", ev.Kind, ev.At, ev.Params.Pos(), err)
			}
		})
	}
	type started struct {
		name  string
		check Check
	}
	var checks []started
	for _, c := range sc.Checks {
		ch, err := checkKind(c.Kind)(sc, c.Params)
		if err != nil {
			return fail(c.Name, err.Error())
		}
		ch.Start(w)
		checks = append(checks, started{c.Name, ch})
	}
	for _, o := range opts.Observe {
		o.Start(w)
	}
	runErr := s.Run(sc.Duration)
	for _, o := range opts.Observe {
		o.Result(w)
	}
	if err := sharedConfigsOf(w).untouched(); err != nil {
		w.Errorf("%v", err)
	}
	ran := s.Elapsed()
	res.VirtualSeconds = ran.Seconds()
	run := CheckResult{Name: "run", Pass: runErr == nil && len(w.errs) == 0, Detail: "no task failed"}
	if runErr != nil {
		run.Detail = runErr.Error()
	} else if len(w.errs) > 0 {
		run.Detail = strings.Join(w.errs, "; ")
	}
	if !run.Pass {
		run.Kind = runKind(runErr, w.errs)
	}
	res.Checks = append(res.Checks, run)
	for _, c := range checks {
		pass, detail := c.check.Result(w)
		kind := ""
		switch {
		case runErr != nil:
			pass, detail, kind = false, "run failed: "+detail, "run failed"
		case !pass:
			kind = failureKind(w, c.check, detail)
		}
		s.Record("check", fmt.Sprintf("%s=%v", c.name, pass))
		res.Checks = append(res.Checks, CheckResult{Name: c.name, Pass: pass, Detail: detail, Kind: kind})
	}
	if sc.Workload != nil {
		res.Workload = WorkloadOf(w).Summary(sc)
	}
	if runErr == nil {
		leak := nothingLeftOpen(w)
		s.Record("check", fmt.Sprintf("%s=%v", leak.Name, leak.Pass))
		res.Checks = append(res.Checks, leak)
		res.SettleSeconds = (s.Elapsed() - ran).Seconds()
		res.VirtualSeconds = s.Elapsed().Seconds()
	}
	res.TraceHash = s.TraceHash()
	res.Events = s.Events()
	res.GrownStacks = s.GrownStacks()
	res.WallSeconds = time.Since(wall).Seconds()
	if !res.Pass() {
		res.Logs = s.Logs()
	}
	return res
}

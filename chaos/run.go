package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/queryflux/queryflux/internal/freeport"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/scenarios"
)

// Options tune a chaos run.
type Options struct {
	// TimeScale multiplies every duration of the file (0.1: a 60 s scenario runs in 6 s).
	TimeScale float64
	// Seed is the simulator's first seed for the side-by-side run.
	Seed uint64
	// SimSeeds is how many seeds (Seed, Seed+1, ...) the simulated metrics average over
	// (default 5): the real run is one sample of timings that depend on timer phases.
	SimSeeds int
	// Bin is the queryflux binary; empty builds ./cmd/queryflux once.
	Bin string
	// LogDir keeps the daemons' logs; empty uses a temporary directory, removed after a pass.
	LogDir string
	// BootTimeout bounds the wait for the fleet to be registered and healthy (default 30 s).
	BootTimeout time.Duration
	// MaxProcesses is the largest fleet run as real processes (default 50); a bigger one is
	// UNSUPPORTED.
	MaxProcesses int
	// SkipUnsupported runs a file without the timeline events and checks real processes
	// cannot do (listed in the report's Skipped); without it such a file is UNSUPPORTED.
	SkipUnsupported bool
}

// Verdict is one check's outcome in the real run.
type Verdict struct {
	Name string `json:"name"`
	// Verdict is PASS, FAIL, UNSUPPORTED, or INCONCLUSIVE: the host itself was later than the
	// check tolerates inside its window, so the host could have decided it (hostlag.go).
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

// Report is a chaos run next to its simulation.
type Report struct {
	Scenario  string  `json:"scenario"`
	Path      string  `json:"path"`
	TimeScale float64 `json:"time_scale"`
	Seed      uint64  `json:"seed"`
	// Unsupported lists why the scenario as a whole cannot run in chaos (its events or roles);
	// then nothing ran.
	Unsupported []string `json:"unsupported,omitempty"`
	// Notes say where the real run departs from the file (a time scale not applied...).
	Notes       []string          `json:"notes,omitempty"`
	Checks      []Verdict         `json:"checks"`
	WallSeconds float64           `json:"wall_seconds"`
	LogDir      string            `json:"log_dir,omitempty"`
	Sim         *scenarios.Result `json:"sim"` // the first seed's run (or the first failing seed's)
	SimSeeds    int               `json:"sim_seeds"`
	Metrics     []Metric          `json:"metrics"`
	// Workload is the real run's workload in the simulator's numbers (nil without one).
	Workload *scenarios.WorkloadSummary `json:"workload,omitempty"`
	// ClientErrors are the first errors the real run's counted queries got at their clients.
	ClientErrors []string `json:"client_errors,omitempty"`
	// Skipped lists what --skip-unsupported left out of the run (events, checks).
	Skipped []string `json:"skipped,omitempty"`
	// HostLag is how late the runner's own timer came while the fleet ran (nil: it did not run).
	HostLag *HostLag `json:"host_lag,omitempty"`
}

// Supported reports whether the scenario ran.
func (r *Report) Supported() bool { return len(r.Unsupported) == 0 }

// Outcome is the real run's verdict: FAIL if a check failed; else INCONCLUSIVE if the host's
// lag could have decided a check (that check was not tested: it never counts as a pass); else
// PASS. Unsupported checks (run with SkipUnsupported) do not count.
func (r *Report) Outcome() string {
	out := "PASS"
	for _, c := range r.Checks {
		switch c.Verdict {
		case "FAIL":
			return "FAIL"
		case "INCONCLUSIVE":
			out = "INCONCLUSIVE"
		}
	}
	return out
}

// Pass reports whether every supported check of the real run passed.
func (r *Report) Pass() bool { return r.Outcome() == "PASS" }

// InconclusiveMetrics names the metrics whose disagreement the host's lag explains.
func (r *Report) InconclusiveMetrics() []string {
	var names []string
	for _, m := range r.Metrics {
		if m.Inconclusive != "" {
			names = append(names, m.Name)
		}
	}
	return names
}

// Agreeing counts the metrics within Tolerance, of those seen in both runs.
func (r *Report) Agreeing() (agree, total int) {
	for _, m := range r.Metrics {
		if m.Missing == "" {
			total++
			if m.Agree {
				agree++
			}
		}
	}
	return agree, total
}

// runner is one real run.
type runner struct {
	sc    *scenarios.Scenario
	opts  Options
	t0    time.Time
	dir   string
	procs map[string]*proc
	api   map[string]string // control plane -> its API address
	ops   map[string]string // worker -> its ops address
	links map[string]*link  // worker -> its link to its control plane
	dbs   []*database
	http  *http.Client
	wl    *fleetWorkload // nil without a workload section
	cfg   *fleetConfig   // nil without a config section
	clock *clocks        // nil without drift or clockStep events
	peers *peerNet       // nil without faults between workers
	// readCPMetrics: every look reads the control planes' /metrics (a check needs them).
	readCPMetrics bool
	// lag times the runner's own wake-ups while the fleet runs (hostlag.go).
	lag *hostLag

	history historyTotals
	// storeTimes is what the control planes' lease store calls took, read at the workload's end.
	storeTimes string

	mu      sync.Mutex
	errs    []string
	pending sync.WaitGroup
}

func (r *runner) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * r.opts.TimeScale)
}

// now is the scenario time of the run (zero before the fleet booted).
func (r *runner) now() time.Duration {
	if r.t0.IsZero() {
		return 0
	}
	return time.Duration(float64(time.Since(r.t0)) / r.opts.TimeScale)
}

// sinceStart is the scenario time of the instant t.
func (r *runner) sinceStart(t time.Time) time.Duration {
	return time.Duration(float64(t.Sub(r.t0)) / r.opts.TimeScale)
}

func (r *runner) errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf("at %v: %s", r.now().Round(time.Millisecond), fmt.Sprintf(format, args...)))
}

// after runs fn after d of real time (the run waits for it before it ends).
func (r *runner) after(d time.Duration, fn func()) {
	r.pending.Add(1)
	time.AfterFunc(d, func() { defer r.pending.Done(); fn() })
}

// Plan reports why a scenario cannot run in chaos (nil: it can), and which checks it cannot read.
// maxProcs bounds the fleet (0: 50).
func Plan(sc *scenarios.Scenario, maxProcs int) (unsupported []string, uncheckable map[string]string) {
	blocking, skippable, uncheckable := PlanParts(sc, maxProcs)
	return append(blocking, skippable...), uncheckable
}

// PlanParts is Plan split: what stops the file from running on real processes at all
// (blocking), and the timeline events a run can leave out (skippable, with --skip-unsupported).
func PlanParts(sc *scenarios.Scenario, maxProcs int) (blocking, skippable []string, uncheckable map[string]string) {
	unsupported := []string{}
	if maxProcs <= 0 {
		maxProcs = 50
	}
	if n := len(sc.Nodes()); n > maxProcs {
		unsupported = append(unsupported, fmt.Sprintf("fleet: %d nodes, more real processes than the limit of %d (--max-procs)", n, maxProcs))
	}
	if sc.Workload != nil {
		unsupported = append(unsupported, planWorkload(sc)...)
	}
	if sc.Config != nil {
		unsupported = append(unsupported, planConfig(sc)...)
		if sc.Workload != nil {
			unsupported = append(unsupported, "config: and workload: together are not supported in chaos")
		}
	}
	var roles []string
	byRole := map[string][]string{}
	for _, s := range sc.Nodes() {
		if s.Role != "worker" && s.Role != "controlplane" {
			if byRole[s.Role] == nil {
				roles = append(roles, s.Role)
			}
			byRole[s.Role] = append(byRole[s.Role], s.Name)
		}
	}
	for _, role := range roles {
		why := "only controlplane and worker run as real processes"
		if role == "pingpong" {
			why = "the simulator's own test workload: no QueryFlux process runs it, so there is nothing real to start"
		}
		unsupported = append(unsupported, fmt.Sprintf("role %q (%s) is not supported in chaos: %s", role, strings.Join(byRole[role], ", "), why))
	}
	for _, ev := range sc.Timeline {
		if _, why := planEvent(sc, ev); why != "" {
			skippable = append(skippable, fmt.Sprintf("timeline %s@%v: %s", ev.Kind, ev.At, why))
		}
	}
	uncheckable = map[string]string{}
	for _, c := range sc.Checks {
		if _, _, why := planCheck(sc, c); why != "" {
			uncheckable[c.Name] = why
		}
	}
	return unsupported, skippable, uncheckable
}

// Run runs the scenario against real processes and in the simulator, and compares them.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Report, error) {
	if opts.TimeScale <= 0 {
		return nil, fmt.Errorf("time scale %v: must be > 0", opts.TimeScale)
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = 30 * time.Second
	}
	var notes []string
	if sc.Workload != nil && opts.TimeScale != 1 {
		notes = append(notes, fmt.Sprintf("time scale %g not applied: a workload runs in real time (the binary's lease, wait and flush settings are whole seconds)", opts.TimeScale))
		opts.TimeScale = 1
	}
	if sc.Config != nil && opts.TimeScale != 1 {
		notes = append(notes, fmt.Sprintf("time scale %g not applied: a config section runs in real time (the binary's poll timeout and peer max age are whole seconds)", opts.TimeScale))
		opts.TimeScale = 1
	}
	if hasEvent(sc, "configHang") && sc.Config.BuildTimeout != controlplane.ConfigBuildTimeoutDefault {
		notes = append(notes, fmt.Sprintf("config.buildTimeout %v not applied: the binary's snapshot build timeout is %v (no setting)",
			sc.Config.BuildTimeout, controlplane.ConfigBuildTimeoutDefault))
	}
	rep := &Report{Scenario: sc.Name, Path: sc.Path, TimeScale: opts.TimeScale, Seed: opts.Seed, Notes: notes}
	blocking, skippable, uncheckable := PlanParts(sc, opts.MaxProcesses)
	rep.Unsupported = blocking
	if opts.SkipUnsupported {
		rep.Skipped = skippable
		for _, name := range slices.Sorted(maps.Keys(uncheckable)) {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("check %q: %s", name, uncheckable[name]))
		}
	} else {
		rep.Unsupported = append(rep.Unsupported, skippable...)
		for _, name := range slices.Sorted(maps.Keys(uncheckable)) {
			rep.Unsupported = append(rep.Unsupported, fmt.Sprintf("check %q: %s", name, uncheckable[name]))
		}
	}
	if !rep.Supported() {
		return rep, nil
	}
	if opts.Bin == "" {
		bin, err := Binary()
		if err != nil {
			return nil, err
		}
		opts.Bin = bin
	}
	if opts.SimSeeds <= 0 {
		opts.SimSeeds = 5
	}
	var simMetrics []map[string]float64
	for i := range opts.SimSeeds {
		res, obs := runSim(sc, opts.Seed+uint64(i))
		if i == 0 || (!res.Pass() && rep.Sim.Pass()) {
			rep.Sim = res // the first seed, or the first failing one
		}
		m := headline(sc, obs)
		maps.Copy(m, workloadHeadline(sc, res.Workload, obs.history))
		simMetrics = append(simMetrics, m)
	}
	rep.SimSeeds = opts.SimSeeds

	wall := time.Now()
	r := &runner{sc: sc, opts: opts, procs: map[string]*proc{}, api: map[string]string{}, ops: map[string]string{},
		links: map[string]*link{}, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	if sc.Workload != nil {
		r.wl = newFleetWorkload(r)
	}
	if sc.Config != nil {
		r.cfg = newFleetConfig(r)
	}
	if hasClockEvents(sc) {
		r.clock = &clocks{faults: map[string]env.ClockFault{}}
	}
	if hasPeerFaults(sc) {
		r.peers = newPeerNet(r.workerPids)
	}
	r.readCPMetrics = slices.ContainsFunc(sc.Checks, func(c *scenarios.CheckSpec) bool { return c.Kind == "selectorUnmatched" })
	r.dir = opts.LogDir
	if r.dir == "" {
		d, err := os.MkdirTemp("", "qfsim-chaos-")
		if err != nil {
			return nil, err
		}
		r.dir = d
	} else if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	defer r.teardown()
	realObs, err := r.run(ctx, rep)
	rep.WallSeconds = time.Since(wall).Seconds()
	if err != nil {
		rep.LogDir = r.dir
		return rep, err
	}
	realMetrics := headline(sc, realObs)
	if r.wl != nil {
		rep.Workload = r.summary()
		rep.ClientErrors = r.clientErrorList()
		maps.Copy(realMetrics, workloadHeadline(sc, rep.Workload, r.history.sums()))
		if r.storeTimes != "" {
			rep.Notes = append(rep.Notes, r.storeTimes)
		}
	}
	rep.Metrics = compare(sc, mean(simMetrics), realMetrics)
	r.hostMetrics(rep.Metrics, realObs)
	if !rep.Pass() || opts.LogDir != "" {
		rep.LogDir = r.dir
	} else {
		defer os.RemoveAll(r.dir)
	}
	return rep, nil
}

// workerPids maps each running worker's process id to its name.
func (r *runner) workerPids() map[int]string {
	out := map[int]string{}
	for _, w := range workerNames(r.sc) {
		if p := r.procs[w]; p != nil {
			if pid := p.pid(); pid != 0 {
				out[pid] = w
			}
		}
	}
	return out
}

func (r *runner) teardown() {
	if r.cfg != nil {
		r.cfg.releaseAll()
	}
	for _, p := range r.procs {
		p.kill()
	}
	for _, l := range r.links {
		l.close()
	}
	if r.peers != nil {
		r.peers.close()
	}
	for _, db := range r.dbs {
		db.drop()
	}
}

// appliedLateNoted is how late (scenario time) the runner may apply a timeline event before the
// report notes it.
const appliedLateNoted = 100 * time.Millisecond

// run boots the fleet, plays the timeline while polling, and judges the checks.
func (r *runner) run(ctx context.Context, rep *Report) (*observer, error) {
	r.lag = startHostLag()
	defer r.lag.close()
	if err := r.boot(ctx); err != nil {
		return nil, err
	}
	sc := r.sc
	type planned struct {
		name  string
		check realCheck
		why   string
	}
	var checks []planned
	needHealth := false
	for _, c := range sc.Checks {
		ch, health, why := planCheck(sc, c)
		needHealth = needHealth || health || r.cfg != nil
		checks = append(checks, planned{c.Name, ch, why})
	}
	var steps []step
	for _, ev := range sc.Timeline {
		if st, why := planEvent(sc, ev); why == "" {
			steps = append(steps, st)
		}
	}
	for _, c := range checks {
		if tr, ok := c.check.(*tokenRevokedCheck); ok {
			steps = append(steps, step{at: tr.at, what: "probe " + c.name, do: func(r *runner) error { tr.probe(r); return nil }})
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })

	obs := newObserver()
	r.t0 = time.Now()
	var reals []realCheck
	for _, c := range checks {
		reals = append(reals, c.check)
	}
	stopWorkload := r.startWorkload(ctx, reals)
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		r.poll(stopPoll, needHealth, obs, func(s *snapshot) {
			for _, c := range checks {
				if c.check != nil {
					c.check.look(sc, s)
				}
			}
		})
	}()
	applied := map[*scenarios.Event]time.Duration{}
	for _, st := range steps {
		if !r.sleepUntil(ctx, st.at) {
			break
		}
		started := r.now()
		if err := st.do(r); err != nil {
			r.errorf("%s: %v", st.what, err)
		}
		if st.ev != nil {
			applied[st.ev] = started
			if late := started - st.at; late >= appliedLateNoted {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s applied %v late (the runner's own timer): what follows it is timed from then",
					st.what, late.Round(time.Millisecond)))
			}
		}
	}
	r.sleepUntil(ctx, sc.Duration)
	close(stopPoll)
	<-polled
	obs.applied = applied
	r.lag.close()
	hl := r.lag.summary(r.sinceStart)
	rep.HostLag = &hl
	r.pending.Wait()
	stopWorkload()
	for name, l := range r.links {
		obs.tokens[name] = l.log.times()
	}

	run := Verdict{Name: "run", Verdict: "PASS", Detail: "no process died unasked, no timeline error"}
	var problems []string
	problems = append(problems, r.errs...)
	for _, name := range slices.Sorted(maps.Keys(r.procs)) {
		problems = append(problems, r.procs[name].unexpectedExits()...)
	}
	if ctx.Err() != nil {
		problems = append(problems, "cancelled: "+ctx.Err().Error())
	}
	if len(problems) > 0 {
		run.Verdict, run.Detail = "FAIL", strings.Join(problems, "; ")
	}
	rep.Checks = append(rep.Checks, run)
	for _, c := range checks {
		v := Verdict{Name: c.name, Verdict: "UNSUPPORTED", Detail: "not supported in chaos: " + c.why}
		if c.check != nil {
			pass, detail := c.check.result(r)
			v = r.hostVerdict(c.check, Verdict{Name: c.name, Verdict: map[bool]string{true: "PASS", false: "FAIL"}[pass], Detail: detail})
		}
		rep.Checks = append(rep.Checks, v)
	}
	return obs, nil
}

// starve approximates "every timer fires delay late" for d: the process is stopped for delay,
// runs for a quarter of it (at least 10 ms), and again, so whatever falls due while it is
// stopped runs up to delay late.
// The runner's own timer paces the bursts, so each run of the process is recorded as it
// happened (a late host lengthens them; hostVerdict reads them).
func (r *runner) starve(p *proc, delay, d time.Duration) {
	run := max(delay/4, 10*time.Millisecond)
	end := time.Now().Add(d)
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		defer p.signal(syscall.SIGCONT, false)
		for time.Now().Before(end) {
			p.signal(syscall.SIGSTOP, false)
			time.Sleep(min(delay, time.Until(end)))
			p.signal(syscall.SIGCONT, false)
			resumed := time.Now()
			time.Sleep(run)
			if time.Now().Before(end) {
				r.lag.starveRan(p.name, resumed, time.Since(resumed))
			}
		}
	}()
}

// sleepUntil waits until scenario time at; false when ctx ended.
func (r *runner) sleepUntil(ctx context.Context, at time.Duration) bool {
	d := time.Until(r.t0.Add(r.scale(at)))
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// intervals are the fleet's timings as the simulated roles would default them, scaled.
type intervals struct {
	heartbeat, staleAfter, evictGrace, reaper time.Duration
	healthProbe, lagThreshold                 time.Duration
	healthFlips                               int // the binary's default: no flag sets it
}

func (r *runner) intervals() intervals {
	iv := r.sc.Intervals
	cfg := controlplane.Config{HeartbeatInterval: iv.Heartbeat, StaleAfter: iv.StaleAfter, EvictGrace: iv.EvictGrace,
		ReaperInterval: iv.Reaper, AllowShortTimeouts: true}.WithDefaults()
	wcfg := worker.Config{HealthProbeInterval: iv.HealthProbe, LagThreshold: iv.LagThreshold}.WithDefaults()
	return intervals{r.scale(cfg.HeartbeatInterval), r.scale(cfg.StaleAfter), r.scale(cfg.EvictGrace), r.scale(cfg.ReaperInterval),
		r.scale(wcfg.HealthProbeInterval), r.scale(wcfg.LagThreshold), wcfg.HealthFlips}
}

// boot starts every control plane (a fresh migrated database each), a proxy per worker, and the
// workers, and waits until every worker is registered and healthy: scenario time 0.
func (r *runner) boot(ctx context.Context) error {
	iv := r.intervals()
	timing := []string{"--allow-short-timeouts", "--heartbeat-interval", iv.heartbeat.String()}
	if r.wl != nil {
		if err := r.wl.createEngines(ctx); err != nil {
			return err
		}
	}
	for _, s := range r.sc.Nodes() {
		if s.Role != "controlplane" {
			continue
		}
		db, err := r.controlPlaneDatabase(ctx)
		if err != nil {
			return err
		}
		addr, err := freeport.Loopback()
		if err != nil {
			return err
		}
		r.api[s.Name] = addr
		cfg := fmt.Sprintf("queryflux:\n  role: controlPlane\n  adminApi: {listen: %q, token: %q}\n  workerApi: {enabled: true, secret: %q}\n  persistence: {databaseUrl: %q}\n",
			addr, adminToken, workerSecret, db.url)
		if r.wl != nil {
			cfg = r.wl.controlPlaneConfig(addr, db.url)
		}
		if r.cfg != nil {
			r.cfg.db[s.Name] = db.url
			cfg = r.cfg.controlPlaneConfig(addr, db.url)
		}
		path, err := r.writeFile(s.Name+".yaml", cfg)
		if err != nil {
			return err
		}
		args := append([]string{"serve", "--config", path, "--stale-after", iv.staleAfter.String(), "--evict-grace", iv.evictGrace.String()}, timing...)
		if hasFlag(r.opts.Bin, "--reaper-interval") {
			args = append(args, "--reaper-interval", iv.reaper.String())
		}
		r.procs[s.Name] = &proc{name: s.Name, bin: r.opts.Bin, logPath: filepath.Join(r.dir, s.Name+".log"), args: args,
			env: append(r.clockEnv(s.Name), r.fenceEnv()...)}
		if err := r.procs[s.Name].start(); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(r.opts.BootTimeout)
	for cp, addr := range r.api {
		for !r.healthy(addr) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("control plane %s not healthy after %v (log %s)", cp, r.opts.BootTimeout, r.procs[cp].logPath)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if r.cfg != nil {
			if err := r.cfg.set(cp, r.cfg.spec.Cap, false); err != nil {
				return fmt.Errorf("the first configuration on %s: %w", cp, err)
			}
		}
	}
	for i, name := range workerNames(r.sc) {
		ops, err := freeport.Loopback()
		if err != nil {
			return err
		}
		r.ops[name] = ops
		if r.peers != nil {
			if err := r.peers.listen(name, peerIP(i), ops); err != nil {
				return err
			}
		}
	}
	for _, s := range r.sc.Nodes() {
		if s.Role != "worker" {
			continue
		}
		l, err := newLink(fmt.Sprintf("%s-%p", s.Name, r), r.api[r.sc.ControlPlaneOf(s.Name)], r.now)
		if err != nil {
			return err
		}
		r.links[s.Name] = l
		ops := r.ops[s.Name]
		cfg := fmt.Sprintf("queryflux:\n  role: worker\n  controlPlane: {url: %q, secret: %q}\n", "http://"+l.addr(), workerSecret)
		if r.wl != nil {
			if r.wl.pg[s.Name], err = freeport.Loopback(); err != nil {
				return err
			}
			if r.wl.usesMySQL() {
				if r.wl.my[s.Name], err = freeport.Loopback(); err != nil {
					return err
				}
			}
			cfg = r.wl.workerConfig("http://"+l.addr(), r.wl.pg[s.Name], r.wl.my[s.Name])
		}
		if r.cfg != nil {
			cfg = r.cfg.workerConfig(s.Name, "http://"+l.addr())
		}
		path, err := r.writeFile(s.Name+".yaml", cfg)
		if err != nil {
			return err
		}
		args := []string{"serve", "--config", path, "--name", s.Name, "--ops-listen", ops}
		args = append(args, timing...)
		if hasFlag(r.opts.Bin, "--health-probe-interval") {
			args = append(args, "--health-probe-interval", iv.healthProbe.String(), "--health-lag-threshold", iv.lagThreshold.String())
		}
		if r.peers != nil {
			args = append(args, "--advertise-host", peerIP(slices.Index(workerNames(r.sc), s.Name)))
		}
		args = append(args, labelArgs(s.Labels)...) // last: relabel replaces them
		r.procs[s.Name] = &proc{name: s.Name, bin: r.opts.Bin, logPath: filepath.Join(r.dir, s.Name+".log"), args: args, env: r.clockEnv(s.Name)}
		if err := r.procs[s.Name].start(); err != nil {
			return err
		}
	}
	for {
		s := r.snapshot(false)
		all := true
		for _, n := range r.sc.Nodes() {
			if n.Role == "worker" {
				info, ok := s.registry[r.sc.ControlPlaneOf(n.Name)][n.Name]
				all = all && ok && info.State == workerapi.StateHealthy && info.Heartbeat != nil
			}
		}
		if all && r.wl != nil {
			all = r.wl.serving(ctx)
		}
		if all && r.cfg != nil {
			s := r.snapshot(true)
			for _, n := range workerNames(r.sc) {
				all = all && r.cfg.booted(s, n)
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the fleet was not registered and healthy after %v (logs in %s)", r.opts.BootTimeout, r.dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fenceEnv is what a control plane's environment adds for workload.engineFence: false: the
// binary's test hook that runs it without the engine fence.
func (r *runner) fenceEnv() []string {
	if wl := r.sc.Workload; wl != nil && wl.EngineFence != nil && !*wl.EngineFence {
		return []string{assembly.TestNoEngineFenceEnv + "=1"}
	}
	return nil
}

// controlPlaneDatabase is a fresh migrated database per control plane, or, with a workload,
// one that every control plane shares (replicas share one lease table, as in production).
func (r *runner) controlPlaneDatabase(ctx context.Context) (*database, error) {
	if r.wl != nil && r.wl.cpDB != nil {
		return r.wl.cpDB, nil
	}
	db, err := newDatabase(ctx, true)
	if err != nil {
		return nil, err
	}
	r.dbs = append(r.dbs, db)
	if r.wl != nil {
		r.wl.cpDB = db
	}
	return db, nil
}

var (
	flagsMu   sync.Mutex
	flagsHelp = map[string]string{}
)

// hasFlag reports whether bin's serve command takes flag (an older binary may lack one).
func hasFlag(bin, flag string) bool {
	flagsMu.Lock()
	defer flagsMu.Unlock()
	help, ok := flagsHelp[bin]
	if !ok {
		out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
		help = string(out)
		flagsHelp[bin] = help
	}
	return strings.Contains(help, flag+" ")
}

func (r *runner) writeFile(name, content string) (string, error) {
	path := filepath.Join(r.dir, name)
	return path, os.WriteFile(path, []byte(content), 0o600)
}

func (r *runner) healthy(addr string) bool {
	resp, err := r.http.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// pollEvery is how often the real run looks: the file's checkEvery scaled, at least 20 ms.
func (r *runner) pollEvery() time.Duration { return max(r.scale(r.sc.CheckEvery), 20*time.Millisecond) }

func (r *runner) poll(stop chan struct{}, needHealth bool, obs *observer, look func(*snapshot)) {
	tick := time.NewTicker(r.pollEvery())
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s := r.snapshot(needHealth)
		if s.t > r.sc.Duration {
			continue
		}
		look(s)
		for _, n := range r.sc.Nodes() {
			if n.Role != "worker" {
				continue
			}
			cp := r.sc.ControlPlaneOf(n.Name)
			if s.cpUp[cp] {
				info, known := s.registry[cp][n.Name]
				obs.look(s.t, n.Name, info, known, r.sinceStart)
				if known && info.Heartbeat != nil && r.daemonLagCounts() {
					r.lag.daemonReported(n.Name, info.LastHeartbeat, time.Duration(info.Heartbeat.Health.LoopLagSeconds*float64(time.Second)), time.Now())
				}
			}
			if st, ok := s.config[n.Name]; ok {
				obs.lookConfig(s.t, n.Name, st.cap)
			}
		}
	}
}

// snapshot reads every control plane's /admin/workers and, if asked, every worker's status.
func (r *runner) snapshot(health bool) *snapshot {
	s := &snapshot{t: r.now(), cpUp: map[string]bool{}, registry: map[string]map[string]workerapi.WorkerInfo{}, health: map[string]string{},
		config: map[string]workerConfigState{}, running: map[string]bool{}, cpMetrics: map[string]string{}}
	for _, w := range workerNames(r.sc) {
		s.running[w] = r.procs[w] != nil && r.procs[w].running()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for cp, addr := range r.api {
		wg.Go(func() {
			list, err := r.adminWorkers(addr)
			metrics := ""
			if err == nil && r.readCPMetrics {
				metrics, err = r.getText("http://"+addr+"/metrics", 500*time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				s.cpUp[cp] = true
				s.registry[cp] = list
				s.cpMetrics[cp] = metrics
			}
		})
	}
	if health {
		for w, addr := range r.ops {
			wg.Go(func() {
				st, err := r.workerStatus(addr)
				metrics := ""
				if err == nil && r.cfg != nil {
					metrics, err = r.getText("http://"+addr+"/metrics", 200*time.Millisecond)
				}
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					s.health[w] = st.Health.State
					if r.cfg != nil {
						s.config[w] = r.cfg.stateOf(st, metrics)
					}
				}
			})
		}
	}
	wg.Wait()
	if r.wl != nil {
		r.wl.look(s)
	}
	return s
}

func (r *runner) get(url, token string, limit time.Duration, into any) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if token != "" {
		workerapi.SetBearer(req, token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// post sends an empty POST with token and wants 200.
func (r *runner) post(url, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	workerapi.SetBearer(req, token)
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, body)
	}
	return nil
}

// getText is a GET of a plain-text page (a worker's /metrics).
func (r *runner) getText(url string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := r.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return string(b), err
}

func (r *runner) adminWorkers(addr string) (map[string]workerapi.WorkerInfo, error) {
	var list []workerapi.WorkerInfo
	if err := r.get("http://"+addr+workerapi.PathAdminWorkers, adminToken, 500*time.Millisecond, &list); err != nil {
		return nil, err
	}
	out := map[string]workerapi.WorkerInfo{}
	for _, w := range list {
		out[w.Name] = w
	}
	return out, nil
}

// workerStatus is what the run reads of a worker's /worker/status.
type workerStatus struct {
	Health   workerapi.HealthStatus   `json:"health"`
	Revision workerapi.RevisionStatus `json:"revision"`
	Config   workerapi.ConfigStatus   `json:"config"`
}

func (r *runner) workerStatus(addr string) (*workerStatus, error) {
	var st workerStatus
	if err := r.get("http://"+addr+workerapi.PathWorkerStatus, "", 200*time.Millisecond, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// heartbeatWith sends one heartbeat with token straight to the control plane (not through the
// worker's proxy) and returns the status.
func (r *runner) heartbeatWith(cp, token string) (int, error) {
	hb := workerapi.Heartbeat{Seq: 1 << 40, SentAt: time.Now(), Health: workerapi.HealthStatus{State: workerapi.HealthHealthy}}
	body, _ := json.Marshal(hb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.api[cp]+workerapi.PathHeartbeat, bytes.NewReader(body))
	req.Header.Set("Content-Type", workerapi.MediaHeartbeat)
	workerapi.SetBearer(req, token)
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

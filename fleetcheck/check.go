package fleetcheck

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/scenarios"
)

// Options of one check.
type Options struct {
	Overlay Overlay
	Checks  int    // fault timelines drawn; default 100
	Seed    uint64 // rapid's seed (0: rapid's own); the report names the one used
	// ShrinkTime bounds the wall time spent shrinking a failing timeline (default 30s).
	ShrinkTime time.Duration

	plantHalfApply bool // tests: workers carry a planted half-apply bug (scenarios.RunOpts)
}

// Report is the verdict of a check.
type Report struct {
	Oracles        []Oracle `json:"oracles"`
	Runs           int      `json:"runs"`
	Seed           uint64   `json:"seed"`
	Findings       []string `json:"findings,omitempty"` // analytic reasons, in words
	Notes          []string `json:"notes,omitempty"`    // how the config was read
	Counterexample string   `json:"counterexample,omitempty"`
	Failure        string   `json:"failure,omitempty"`
}

// Oracle is one safety property's verdict: pass, fail or skipped (with why).
type Oracle struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail,omitempty"`
}

// Passed reports whether no oracle failed and nothing was found.
func (r *Report) Passed() bool {
	for _, o := range r.Oracles {
		if o.Verdict == "fail" {
			return false
		}
	}
	return len(r.Findings) == 0
}

// Check runs opts.Checks fault timelines over the fleet cfg describes.
func Check(cfg *config.Config, opts Options) (*Report, error) {
	if err := opts.Overlay.Validate(); err != nil {
		return nil, err
	}
	o := opts.Overlay.withDefaults()
	f, err := fromConfig(cfg)
	if err != nil {
		return nil, err
	}
	o.settle = f.convergenceBound(o) + 5*time.Second
	if opts.Checks <= 0 {
		opts.Checks = 100
	}
	checks, skipped := f.oracles()
	rep := &Report{Seed: opts.Seed, Notes: f.notes}
	if finding := f.driftFinding(o); finding != "" {
		rep.Findings = append(rep.Findings, finding)
	}
	testingInit.Do(initTestingFlags)
	if opts.ShrinkTime <= 0 {
		opts.ShrinkTime = 30 * time.Second
	}
	restore := rapidFlags(opts.Checks, opts.Seed, opts.ShrinkTime)
	defer restore()
	tb := &collector{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != errFailNow {
				panic(r)
			}
		}()
		rapid.Check(tb, func(rt *rapid.T) {
			tb.runs++
			yaml := f.scenarioYAML(o, drawTimeline(rt, f, o), checks)
			sc, err := scenarios.Parse("fleetcheck.yaml", []byte(yaml))
			if err != nil {
				panic(fmt.Sprintf("fleetcheck built a scenario the loader refuses: %v\n%s", err, yaml))
			}
			seed := rapid.Uint64().Draw(rt, "seed")
			res := scenarios.Run(sc, seed, scenarios.RunOpts{PlantHalfApply: opts.plantHalfApply})
			for _, c := range res.Checks {
				if !c.Pass {
					tb.last = failure{check: c.Name, detail: c.Detail, yaml: fmt.Sprintf("# qfsim run FILE --seed %d\n%s", seed, yaml)}
					rt.Fatalf("seed %d: %s: %s", seed, c.Name, c.Detail)
				}
			}
		})
	}()
	rep.Runs = tb.runs
	for _, name := range checks {
		v := Oracle{Name: name, Verdict: "pass"}
		if tb.failed && strings.HasPrefix(tb.last.check, name) {
			v.Verdict, v.Detail = "fail", tb.last.detail
		}
		rep.Oracles = append(rep.Oracles, v)
	}
	for name, why := range skipped {
		rep.Oracles = append(rep.Oracles, Oracle{Name: name, Verdict: "skipped", Detail: why})
	}
	if tb.failed {
		rep.Counterexample = tb.last.yaml
		rep.Failure = tb.message
		if !anyFailed(rep.Oracles) { // the run itself failed (a panic, a stalled task)
			first, _, _ := strings.Cut(tb.message, "\n")
			rep.Oracles = append(rep.Oracles, Oracle{Name: "run", Verdict: "fail", Detail: first})
		}
	}
	return rep, nil
}

func anyFailed(os []Oracle) bool {
	for _, o := range os {
		if o.Verdict == "fail" {
			return true
		}
	}
	return false
}

// scenarioYAML is one run's scenario file: the fleet, its workload, the drawn timeline, the
// oracles. With a settle time the faults heal at the overlay's duration and the run goes on,
// without new arrivals, until every node must run the latest revision.
func (f fleet) scenarioYAML(o Overlay, timeline string, checks []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: fleetcheck\nduration: %v\n", o.Duration+o.settle)
	fmt.Fprintf(&b, "intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s, configPoll: %v, configRetryMax: %v}\n",
		f.pollTimeout, f.retryMax)
	link := "{dist: exponential, min: 1ms, mean: 3ms}"
	if o.latency > 0 {
		link = fmt.Sprintf("{dist: fixed, min: %v}", o.latency)
	}
	fmt.Fprintf(&b, "network:\n  latency: %s\n", link)
	fmt.Fprintf(&b, "fleet:\n  controlPlanes: [{name: cp-1}]\n  workers: [{prefix: w-, count: %d}]\n", o.Workers)
	b.WriteString(f.workloadYAML(o))
	b.WriteString("timeline:\n")
	b.WriteString(timeline)
	if o.settle > 0 {
		fmt.Fprintf(&b, "  # the faults heal\n  - {at: %v, heal: {}}\n  - {at: %v, link: {from: workers, to: cp-1, latency: %s}}\n  - {at: %v, restart: all}\n",
			o.Duration, o.Duration, link, o.Duration)
	}
	b.WriteString("checks:\n")
	for _, c := range checks {
		params := "{}"
		if c == "configNeverHalfApplied" && o.settle > 0 {
			params = fmt.Sprintf("{convergedFrom: %v}", o.Duration+o.settle-5*time.Second)
		}
		fmt.Fprintf(&b, "  - %s: %s\n", c, params)
	}
	return b.String()
}

// drawTimeline draws faults and config edits over the run. They are a list of events, so rapid
// shrinks a failing timeline by deleting any of them.
func drawTimeline(rt *rapid.T, f fleet, o Overlay) string {
	nodes := []string{"cp-1"}
	for i := 1; i <= o.Workers; i++ {
		nodes = append(nodes, fmt.Sprintf("w-%d", i))
	}
	last := int(o.Duration/time.Second) - 5
	event := rapid.Custom(func(t *rapid.T) string { return drawEvent(t, f, o, nodes, max(last, 2)) })
	return strings.Join(rapid.SliceOfN(event, 0, 12).Draw(rt, "events"), "")
}

// drawEvent draws one timeline event (a control-plane restart is two lines) at or before last.
func drawEvent(t *rapid.T, f fleet, o Overlay, nodes []string, last int) string {
	var b strings.Builder
	add := func(at int, ev string) { fmt.Fprintf(&b, "  - {at: %ds, %s}\n", at, ev) }
	at := rapid.IntRange(1, last).Draw(t, "at")
	node := func() string { return rapid.SampledFrom(nodes).Draw(t, "node") }
	worker := func() string { return rapid.SampledFrom(nodes[1:]).Draw(t, "worker") }
	switch rapid.SampledFrom([]string{"crash", "restart", "cpRestart", "partition", "heal", "link", "drift", "clockStep", "starve", "capEdit", "configEdit"}).Draw(t, "kind") {
	case "crash": // a worker's queries outlive it on the engine
		add(at, "crash: "+worker())
	case "restart":
		add(at, "restart: "+node())
	case "cpRestart":
		add(at, "crash: cp-1")
		add(min(at+rapid.IntRange(1, 8).Draw(t, "down"), last+4), "restart: cp-1")
	case "partition":
		add(at, fmt.Sprintf("partition: {from: %s, to: cp-1, oneWay: %v}", worker(), rapid.Bool().Draw(t, "oneWay")))
	case "heal":
		add(at, "heal: {}")
	case "link":
		add(at, fmt.Sprintf("link: {from: %s, to: cp-1, drop: %.2f, latency: {dist: exponential, min: 1ms, mean: %dms}}",
			worker(), rapid.Float64Range(0.05, 0.9).Draw(t, "p"), rapid.IntRange(1, 800).Draw(t, "lat")))
	case "drift":
		d := o.MaxDriftRate
		add(at, fmt.Sprintf("drift: {node: %s, rate: %.4f}", node(), rapid.Float64Range(1-d, 1+d).Draw(t, "rate")))
	case "clockStep":
		step := time.Duration(rapid.Int64Range(-int64(o.MaxClockStep/time.Second), int64(o.MaxClockStep/time.Second)).Draw(t, "step")) * time.Second
		if step == 0 {
			step = time.Second
		}
		add(at, fmt.Sprintf("clockStep: {node: %s, by: %v}", node(), step))
	case "starve":
		add(at, fmt.Sprintf("starve: {node: %s, delay: %dms, for: 8s}", worker(),
			rapid.IntRange(50, max(int(o.MaxStarvation/time.Millisecond), 51)).Draw(t, "delay")))
	case "capEdit":
		c := rapid.SampledFrom(f.clusters).Draw(t, "cluster")
		add(at, fmt.Sprintf("configSet: {cluster: %q, cap: %d}", c.name, rapid.IntRange(1, 2*c.cap).Draw(t, "cap")))
	case "configEdit":
		add(at, "configEdit: "+drawEdit(t, f))
	}
	return b.String()
}

// drawEdit draws one revision's changes: a cap, a group's members, a tag's group (each when
// the fleet has more than one to choose from), and whether the revision is one no worker can
// compile.
func drawEdit(rt *rapid.T, f fleet) string {
	var parts []string
	if rapid.Bool().Draw(rt, "editCap") {
		c := rapid.SampledFrom(f.clusters).Draw(rt, "editCluster")
		parts = append(parts, fmt.Sprintf("caps: {%q: %d}", c.name, rapid.IntRange(1, 2*c.cap).Draw(rt, "editCapTo")))
	}
	if len(f.clusters) > 1 && rapid.Bool().Draw(rt, "editMembers") {
		g := rapid.SampledFrom(f.groups).Draw(rt, "editGroup")
		var members []string
		for _, c := range f.clusters {
			if rapid.Bool().Draw(rt, "member "+c.name) {
				members = append(members, c.name)
			}
		}
		if len(members) == 0 {
			members = g.members
		}
		parts = append(parts, fmt.Sprintf("members: {%q: [%s]}", g.name, quoteAll(members)))
	}
	if len(f.groups) > 1 && rapid.Bool().Draw(rt, "editRoute") {
		tag := rapid.SampledFrom(f.groups).Draw(rt, "editTag")
		to := rapid.SampledFrom(f.groups).Draw(rt, "editTo")
		parts = append(parts, fmt.Sprintf("routes: {%q: %q}", tag.name, to.name))
	}
	if len(parts) == 0 {
		c := f.clusters[0]
		parts = append(parts, fmt.Sprintf("caps: {%q: %d}", c.name, c.cap))
	}
	if rapid.IntRange(0, 3).Draw(rt, "bad") == 0 {
		parts = append(parts, "bad: true")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// failure is the last failing run rapid reported (after shrinking, the minimal one).
type failure struct{ check, detail, yaml string }

var errFailNow = errors.New("fleetcheck: rapid failed the check")

var testingInit sync.Once

// initTestingFlags: rapid asks testing.Short(), which needs the testing flags registered and
// the flag set parsed; outside go test nothing did that (no arguments are parsed: the CLI has
// its own flags).
func initTestingFlags() {
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
}

// collector is the rapid.TB of a check outside `go test`: it keeps what rapid reports.
type collector struct {
	runs    int
	failed  bool
	message string
	last    failure
}

func (c *collector) Helper()                         {}
func (c *collector) Name() string                    { return "fleetcheck" }
func (c *collector) Logf(format string, args ...any) {}
func (c *collector) Log(args ...any)                 {}
func (c *collector) Skipf(format string, args ...any) {
	panic(fmt.Sprintf("fleetcheck: rapid skipped: "+format, args...))
}
func (c *collector) Skip(args ...any) {
	panic(fmt.Sprint(append([]any{"fleetcheck: rapid skipped: "}, args...)...))
}
func (c *collector) SkipNow() { panic("fleetcheck: rapid skipped") }
func (c *collector) Errorf(format string, args ...any) {
	c.failed, c.message = true, fmt.Sprintf(format, args...)
}
func (c *collector) Error(args ...any) { c.failed, c.message = true, fmt.Sprint(args...) }
func (c *collector) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	panic(errFailNow)
}
func (c *collector) Fatal(args ...any) { c.Error(args...); panic(errFailNow) }
func (c *collector) FailNow()          { c.failed = true; panic(errFailNow) }
func (c *collector) Fail()             { c.failed = true }
func (c *collector) Failed() bool      { return c.failed }

// rapidFlags sets rapid's own flags (it reads them from the process's flag set) for this check
// and returns how to put them back.
func rapidFlags(checks int, seed uint64, shrink time.Duration) (restore func()) {
	var undo []func()
	set := func(name, value string) {
		if f := flag.Lookup(name); f != nil {
			old := f.Value.String()
			_ = f.Value.Set(value)
			undo = append(undo, func() { _ = f.Value.Set(old) })
		}
	}
	set("rapid.checks", fmt.Sprint(checks))
	if seed != 0 {
		set("rapid.seed", fmt.Sprint(seed))
	}
	set("rapid.nofailfile", "true")
	set("rapid.shrinktime", shrink.String())
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

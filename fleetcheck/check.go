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
	if opts.Checks <= 0 {
		opts.Checks = 100
	}
	checks, skipped := f.oracles()
	rep := &Report{Seed: opts.Seed, Notes: f.notes}
	if finding := f.driftFinding(o); finding != "" {
		rep.Findings = append(rep.Findings, finding)
	}
	testingInit.Do(initTestingFlags)
	restore := rapidFlags(opts.Checks, opts.Seed)
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
			res := scenarios.Run(sc, seed, scenarios.RunOpts{})
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
// oracles.
func (f fleet) scenarioYAML(o Overlay, timeline string, checks []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: fleetcheck\nduration: %v\n", o.Duration)
	fmt.Fprintf(&b, "intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}\n")
	if o.latency > 0 {
		fmt.Fprintf(&b, "network:\n  latency: {dist: fixed, min: %v}\n", o.latency)
	} else {
		b.WriteString("network:\n  latency: {dist: exponential, min: 1ms, mean: 3ms}\n")
	}
	fmt.Fprintf(&b, "fleet:\n  controlPlanes: [{name: cp-1}]\n  workers: [{prefix: w-, count: %d}]\n", o.Workers)
	b.WriteString(f.workloadYAML(o))
	b.WriteString("timeline:\n")
	b.WriteString(timeline)
	b.WriteString("checks:\n")
	for _, c := range checks {
		fmt.Fprintf(&b, "  - %s: {}\n", c)
	}
	return b.String()
}

// drawTimeline draws faults over the run: rapid shrinks it by deleting events.
func drawTimeline(rt *rapid.T, f fleet, o Overlay) string {
	var b strings.Builder
	nodes := []string{"cp-1"}
	for i := 1; i <= o.Workers; i++ {
		nodes = append(nodes, fmt.Sprintf("w-%d", i))
	}
	workers := nodes[1:]
	last := int(o.Duration/time.Second) - 5
	add := func(at int, ev string) { fmt.Fprintf(&b, "  - {at: %ds, %s}\n", at, ev) }
	for i := range rapid.IntRange(0, 12).Draw(rt, "events") {
		at := rapid.IntRange(1, max(last, 2)).Draw(rt, fmt.Sprint("at", i))
		node := rapid.SampledFrom(nodes).Draw(rt, fmt.Sprint("node", i))
		worker := rapid.SampledFrom(workers).Draw(rt, fmt.Sprint("worker", i))
		switch rapid.SampledFrom([]string{"crash", "restart", "cpRestart", "partition", "heal", "link", "drift", "clockStep", "starve"}).Draw(rt, fmt.Sprint("kind", i)) {
		case "crash": // a worker's queries outlive it on the engine
			add(at, "crash: "+worker)
		case "restart":
			add(at, "restart: "+node)
		case "cpRestart":
			add(at, "crash: cp-1")
			add(min(at+rapid.IntRange(1, 8).Draw(rt, fmt.Sprint("down", i)), last+4), "restart: cp-1")
		case "partition":
			add(at, fmt.Sprintf("partition: {from: %s, to: cp-1, oneWay: %v}", worker, rapid.Bool().Draw(rt, fmt.Sprint("oneWay", i))))
		case "heal":
			add(at, "heal: {}")
		case "link":
			add(at, fmt.Sprintf("link: {from: %s, to: cp-1, drop: %.2f, latency: {dist: exponential, min: 1ms, mean: %dms}}",
				worker, rapid.Float64Range(0.05, 0.9).Draw(rt, fmt.Sprint("p", i)), rapid.IntRange(1, 800).Draw(rt, fmt.Sprint("lat", i))))
		case "drift":
			d := o.MaxDriftRate
			add(at, fmt.Sprintf("drift: {node: %s, rate: %.4f}", node, rapid.Float64Range(1-d, 1+d).Draw(rt, fmt.Sprint("rate", i))))
		case "clockStep":
			step := time.Duration(rapid.Int64Range(-int64(o.MaxClockStep/time.Second), int64(o.MaxClockStep/time.Second)).Draw(rt, fmt.Sprint("step", i))) * time.Second
			if step == 0 {
				step = time.Second
			}
			add(at, fmt.Sprintf("clockStep: {node: %s, by: %v}", node, step))
		case "starve":
			add(at, fmt.Sprintf("starve: {node: %s, delay: %dms, for: 8s}", worker,
				rapid.IntRange(50, max(int(o.MaxStarvation/time.Millisecond), 51)).Draw(rt, fmt.Sprint("delay", i))))
		}
	}
	return b.String()
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
func rapidFlags(checks int, seed uint64) (restore func()) {
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
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/scenarios"
)

// A check is INCONCLUSIVE exactly when the runner's own wake-ups came later than the check's
// budget inside its window (widened back by how long a late timer shows), as often as it takes
// to move the states the check reads: a genuine failure on a host that was on time stays a
// failure, and a pass on a late host is no pass. registry-starve at time scale 0.25: lag
// threshold 62.5ms, probes every 125ms, 3 in a row flip a worker's health; heartbeat 500ms,
// staleAfter 1.5s, evictGrace 2.5s.
func TestHostVerdictInconclusiveOnlyWhenTheHostWasLate(t *testing.T) {
	sc := load(t, "registry-starve.yaml")
	t0 := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	at := func(scenario time.Duration) time.Time { return t0.Add(scenario / 4) }
	// run is n wake-ups each lag late, the next probe due 125ms after each woke.
	run := func(first time.Time, lag time.Duration, n int) []lagSample {
		var out []lagSample
		for i := range n {
			out = append(out, lagSample{first.Add(time.Duration(i) * (125*time.Millisecond + lag)), lag})
		}
		return out
	}
	healthy := newStateCheck("selfHealth", []string{"w-2"}, "healthy", scenarios.Window{From: 10 * time.Second, To: 20 * time.Second, Mode: "always"})
	unhealthy := newStateCheck("reportedHealth", []string{"w-1"}, "unhealthy", scenarios.Window{From: 30 * time.Second, To: 40 * time.Second})
	notEvicted := newStateCheck("registryState", []string{"w-1"}, "evicted", scenarios.Window{To: 90 * time.Second, Mode: "never"})
	notStale := newStateCheck("registryState", []string{"w-1"}, "stale", scenarios.Window{To: 90 * time.Second, Mode: "never"})
	config := newStateCheck("configStatus", []string{"w-1"}, "x", scenarios.Window{From: 11 * time.Second, To: 14 * time.Second, Mode: "always"})
	config.probeFn = func(*snapshot, string) (string, bool) { return "", false }
	kinds := newStateCheck("groupsServed", []string{"w-1"}, "x", scenarios.Window{To: 90 * time.Second})

	for _, tc := range []struct {
		name    string
		late    []lagSample
		check   *stateCheck
		verdict string
		want    string
	}{
		{"on time, genuine failure", run(at(15*time.Second), 40*time.Millisecond, 5), healthy, "FAIL", "FAIL"},
		{"on time, pass", nil, healthy, "PASS", "PASS"},
		{"one late wake-up flips no worker", run(at(15*time.Second), 300*time.Millisecond, 1), healthy, "FAIL", "FAIL"},
		{"two in a row flip no worker", run(at(15*time.Second), 134*time.Millisecond, 2), healthy, "FAIL", "FAIL"},
		{"three late, too far apart", append(run(at(15*time.Second), 134*time.Millisecond, 2), run(at(20*time.Second), 134*time.Millisecond, 1)...), healthy, "FAIL", "FAIL"},
		{"three in a row inside the window, failure", run(at(15*time.Second), 134*time.Millisecond, 3), healthy, "FAIL", "INCONCLUSIVE"},
		{"three in a row inside the window, pass", run(at(35*time.Second), 100*time.Millisecond, 3), unhealthy, "PASS", "INCONCLUSIVE"},
		{"late after the window", run(at(21*time.Second), 100*time.Millisecond, 3), healthy, "FAIL", "FAIL"},
		// 3 probes of 125ms: a worker that flipped just before the window is unhealthy at its start.
		{"late just before the window", run(at(10*time.Second).Add(-700*time.Millisecond), 100*time.Millisecond, 3), healthy, "FAIL", "INCONCLUSIVE"},
		{"late long before the window", run(at(10*time.Second).Add(-2*time.Second), 100*time.Millisecond, 3), healthy, "FAIL", "FAIL"},
		// A stall that began inside the window counts, though it ended after.
		{"a stall ending after the window", run(at(20*time.Second).Add(-450*time.Millisecond), 200*time.Millisecond, 3), healthy, "FAIL", "INCONCLUSIVE"},
		{"under a registry state's budget", run(at(50*time.Second), 900*time.Millisecond, 1), notStale, "FAIL", "FAIL"},
		{"over a registry state's budget", run(at(50*time.Second), 1100*time.Millisecond, 1), notStale, "FAIL", "INCONCLUSIVE"},
		{"eviction tolerates more", run(at(50*time.Second), 1100*time.Millisecond, 1), notEvicted, "PASS", "PASS"},
		// config-bad-smoke, 08:16: a 1.6s stall at 10.1s, after the edit at 9s, before the look at 11s.
		{"a config edit's margin eaten", run(at(10100*time.Millisecond), 1588*time.Millisecond, 1), config, "FAIL", "INCONCLUSIVE"},
		{"a config edit's margin kept", run(at(10100*time.Millisecond), 900*time.Millisecond, 1), config, "FAIL", "FAIL"},
		{"a stall once the config looks", run(at(20*time.Second), 1588*time.Millisecond, 1), config, "FAIL", "FAIL"},
		{"a check no timer decides", run(at(50*time.Second), 5*time.Second, 3), kinds, "FAIL", "FAIL"},
	} {
		r := &runner{sc: sc, opts: Options{TimeScale: 0.25}, t0: t0, lag: &hostLag{late: tc.late}}
		v := r.hostVerdict(tc.check, Verdict{Name: tc.name, Verdict: tc.verdict, Detail: "what the daemons showed"})
		if v.Verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, v.Verdict, v.Detail, tc.want)
			continue
		}
		if tc.want == "INCONCLUSIVE" && (!strings.Contains(v.Detail, "the host was late") ||
			!strings.Contains(v.Detail, "the daemons' verdict was "+tc.verdict+": what the daemons showed")) {
			t.Errorf("%s: detail %q does not name the lag and the daemons' verdict", tc.name, v.Detail)
		}
	}
}

// A report with an INCONCLUSIVE check is not a pass; a failure elsewhere still makes it FAIL.
func TestReportOutcome(t *testing.T) {
	for _, tc := range []struct {
		verdicts []string
		want     string
	}{
		{[]string{"PASS", "UNSUPPORTED"}, "PASS"},
		{[]string{"PASS", "INCONCLUSIVE"}, "INCONCLUSIVE"},
		{[]string{"INCONCLUSIVE", "FAIL", "PASS"}, "FAIL"},
	} {
		rep := &Report{}
		for _, v := range tc.verdicts {
			rep.Checks = append(rep.Checks, Verdict{Name: v, Verdict: v})
		}
		if got := rep.Outcome(); got != tc.want || rep.Pass() != (tc.want == "PASS") {
			t.Errorf("%v: outcome %s pass %v, want %s", tc.verdicts, got, rep.Pass(), tc.want)
		}
	}
}

// A starve is SIGSTOP bursts the runner's own timer paces: when the host delays the runner so
// that the starved worker runs a probe interval (125ms) at once, a probe can come on time and
// the starve was not applied; the checks on that worker's health are INCONCLUSIVE. Runs shorter
// than that, or of another worker, leave the verdict alone.
func TestHostVerdictInconclusiveWhenTheStarveLapsed(t *testing.T) {
	sc := load(t, "registry-starve.yaml")
	t0 := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	at := func(scenario time.Duration) time.Time { return t0.Add(scenario / 4) }
	marks := newStateCheck("selfHealth", []string{"w-1"}, "unhealthy", scenarios.Window{From: 30 * time.Second, To: 36 * time.Second})
	for _, tc := range []struct {
		name string
		node string
		ran  time.Duration
		want string
	}{
		{"runs as planned", "w-1", 65 * time.Millisecond, "FAIL"},
		{"a run as long as a probe interval", "w-1", 130 * time.Millisecond, "INCONCLUSIVE"},
		{"another worker's starve", "w-2", 300 * time.Millisecond, "FAIL"},
	} {
		h := &hostLag{}
		h.starveRan(tc.node, at(32*time.Second), tc.ran)
		r := &runner{sc: sc, opts: Options{TimeScale: 0.25}, t0: t0, lag: h}
		v := r.hostVerdict(marks, Verdict{Name: tc.name, Verdict: "FAIL", Detail: "0/15 looks unhealthy"})
		if v.Verdict != tc.want {
			t.Errorf("%s: %s %s, want %s", tc.name, v.Verdict, v.Detail, tc.want)
		}
		if tc.want == "INCONCLUSIVE" && !strings.Contains(v.Detail, "a run of the starved w-1 130ms after it began") {
			t.Errorf("%s: detail %q does not name the lapsed run", tc.name, v.Detail)
		}
	}
}

// A wait after an event (a new session after a heal) that disagrees with the simulator is
// INCONCLUSIVE when the runner's own timer lost enough time inside that wait for the rest to
// agree: real daemons spend real time where the scenario's scale multiplies it. Lost time
// outside the wait, or too little of it, leaves the disagreement a disagreement.
// oneway-latency at scale 0.25: phase bound 3.2s, the simulator's mean 1.53s.
func TestHostMetricsInconclusiveOnlyWhenTheHostTookTheDifference(t *testing.T) {
	sc := load(t, "../chaos/testdata/oneway-latency.yaml")
	t0 := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	at := func(scenario time.Duration) time.Time { return t0.Add(scenario / 4) }
	const name = "w-1 new session after heal@50s"
	for _, tc := range []struct {
		what string
		late []lagSample
		want bool
	}{
		{"on time", nil, false},
		{"300ms real (1.2s) lost inside the wait", []lagSample{{at(52 * time.Second), 300 * time.Millisecond}}, true},
		{"the same stall before the heal", []lagSample{{at(49 * time.Second), 300 * time.Millisecond}}, false},
		{"half of it inside the wait", []lagSample{{at(50*time.Second + 600*time.Millisecond), 300 * time.Millisecond}}, false},
		{"many small waits inside", func() (s []lagSample) {
			for i := range 20 {
				s = append(s, lagSample{at(50*time.Second + time.Duration(i)*160*time.Millisecond), 20 * time.Millisecond})
			}
			return s
		}(), true},
	} {
		r := &runner{sc: sc, opts: Options{TimeScale: 0.25}, t0: t0, lag: &hostLag{late: tc.late}}
		o := newObserver()
		o.windows[name] = [2]time.Duration{50 * time.Second, 54 * time.Second}
		ms := []Metric{{Name: name, Sim: 1.53, Real: 4}, {Name: "evictions", Sim: 1, Real: 2}}
		r.hostMetrics(ms, o)
		if got := ms[0].Inconclusive != ""; got != tc.want {
			t.Errorf("%s: inconclusive %v (%q), want %v", tc.what, got, ms[0].Inconclusive, tc.want)
		}
		if ms[1].Inconclusive != "" {
			t.Errorf("%s: a metric with no wait made inconclusive: %q", tc.what, ms[1].Inconclusive)
		}
	}
}

// Workload checks at time scale 1 (lease-kill-smoke: a crash at 5s, leases of 3s, a drift
// margin of 1s; the window widened back by 5s): a stall of the host longer than half a second
// inside a check's window, or in the lease's life before it, makes the leases and admissions
// the check reads the host's doing as much as the fleet's: INCONCLUSIVE. A shorter stall, or
// one after the window, leaves the verdict alone; and a cap broken is a FAIL however late the
// host was (the cap holds whatever the timers do), as is a violation an expectViolation check
// wanted a PASS. A pass on a late host stands: the host delays grants, reclaims and kills.
func TestHostVerdictOnWorkloadChecks(t *testing.T) {
	sc := load(t, "../chaos/testdata/lease-kill-smoke.yaml")
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	stall := func(at, lag time.Duration) []lagSample { return []lagSample{{t0.Add(at), lag}} }
	zero, two := 0, 2
	reclaimed := newCount(sc, "leases held by w-1", scenarios.CountWindow{From: 10 * time.Second, AtMost: &zero}, nil)
	peak := func(n int) *engineMaxCheck {
		return &engineMaxCheck{cluster: "c1", win: scenarios.CountWindow{To: 16 * time.Second}, bounds: scenarios.Bounds{AtLeast: &two, AtMost: &two}, peak: n}
	}
	wanted := func(seen bool) *expectViolationCheck { return &expectViolationCheck{engine: true, seen: seen} }
	for _, tc := range []struct {
		name    string
		late    []lagSample
		check   realCheck
		verdict string
		want    string
	}{
		{"on time, genuine failure", nil, reclaimed, "FAIL", "FAIL"},
		{"a 1.3s stall as the leases expire", stall(8*time.Second, 1300*time.Millisecond), reclaimed, "FAIL", "INCONCLUSIVE"},
		{"a 1.3s stall at the crash, a lease's life before the window", stall(5500*time.Millisecond, 1300*time.Millisecond), reclaimed, "FAIL", "INCONCLUSIVE"},
		{"a 1.3s stall inside the window, pass (the host only delays)", stall(12*time.Second, 1300*time.Millisecond), reclaimed, "PASS", "PASS"},
		{"a 300ms stall", stall(8*time.Second, 300*time.Millisecond), reclaimed, "FAIL", "FAIL"},
		{"a stall long before the window", stall(2*time.Second, 1300*time.Millisecond), reclaimed, "FAIL", "FAIL"},
		{"the engine under its atLeast on a late host", stall(8*time.Second, 1300*time.Millisecond), peak(1), "FAIL", "INCONCLUSIVE"},
		{"the engine over the cap on a late host", stall(8*time.Second, 1300*time.Millisecond), peak(3), "FAIL", "FAIL"},
		{"the cap broken on a late host", stall(8*time.Second, 1300*time.Millisecond), &capCheck{engine: true}, "FAIL", "FAIL"},
		{"a wanted violation not seen on a late host", stall(8*time.Second, 1300*time.Millisecond), wanted(false), "FAIL", "INCONCLUSIVE"},
		{"a wanted violation seen on a late host", stall(8*time.Second, 1300*time.Millisecond), wanted(true), "PASS", "PASS"},
		{"a wanted violation not seen on time", nil, wanted(false), "FAIL", "FAIL"},
	} {
		r := &runner{sc: sc, opts: Options{TimeScale: 1}, t0: t0, lag: &hostLag{late: tc.late}}
		v := r.hostVerdict(tc.check, Verdict{Name: tc.name, Verdict: tc.verdict, Detail: "what the daemons showed"})
		if v.Verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, v.Verdict, v.Detail, tc.want)
		}
	}
}

// A worker's time from its last heartbeat to stale or evicted is a wait the control plane's
// timers and the runner's looks time: when it disagrees with the simulator only by the time
// the runner's own timer lost inside it, it is INCONCLUSIVE (oneway-latency at scale 0.25: a
// 1.3s stall is 5.2s of scenario time on top of staleAfter + evictGrace's 16s).
func TestHostMetricsCoverTheTimeToStaleAndEvicted(t *testing.T) {
	sc := load(t, "../chaos/testdata/oneway-latency.yaml")
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	at := func(scenario time.Duration) time.Time { return t0.Add(scenario / 4) }
	const evicted = "w-1 evicted after last heartbeat (partition@20s)"
	o := newObserver()
	beat := 19 * time.Second
	o.beats["w-1"] = []time.Duration{beat}
	o.states["w-1"] = []stateAt{{t: 40200 * time.Millisecond, state: "evicted", beat: beat, beats: true}}
	real := headline(sc, o)
	if got := real[evicted]; got < 21 || got > 21.5 {
		t.Fatalf("%s: %v, want 21.2s", evicted, got)
	}
	for _, tc := range []struct {
		what string
		late []lagSample
		want bool
	}{
		{"on time", nil, false},
		{"1.3s real lost in the wait", []lagSample{{at(30 * time.Second), 1300 * time.Millisecond}}, true},
		{"the same stall after the eviction", []lagSample{{at(45 * time.Second), 1300 * time.Millisecond}}, false},
	} {
		r := &runner{sc: sc, opts: Options{TimeScale: 0.25}, t0: t0, lag: &hostLag{late: tc.late}}
		ms := []Metric{{Name: evicted, Sim: 16.4, Real: real[evicted]}}
		r.hostMetrics(ms, o)
		if got := ms[0].Inconclusive != ""; got != tc.want {
			t.Errorf("%s: inconclusive %v (%q), want %v", tc.what, got, ms[0].Inconclusive, tc.want)
		}
	}
}

// A state a check wants inside its window ("w-1 is evicted" in [30s, 40s], oneway-latency at
// scale 0.25) that came after it is INCONCLUSIVE when the time the runner's own timer lost
// before then explains the delay (a control plane's reaper that woke late evicts late): a
// 1.3s stall is 5.2s of scenario time. A stall too short for the delay, a state that never
// came, or one that came inside the window leave the verdict alone.
func TestHostVerdictStateThatCameLate(t *testing.T) {
	sc := load(t, "../chaos/testdata/oneway-latency.yaml")
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	at := func(scenario time.Duration) time.Time { return t0.Add(scenario / 4) }
	for _, tc := range []struct {
		name    string
		late    []lagSample
		came    time.Duration // 0: never
		verdict string
		want    string
	}{
		{"evicted 1.2s late after a 1.3s stall", []lagSample{{at(33 * time.Second), 1300 * time.Millisecond}}, 41200 * time.Millisecond, "FAIL", "INCONCLUSIVE"},
		{"evicted 1.2s late after a 200ms stall", []lagSample{{at(33 * time.Second), 200 * time.Millisecond}}, 41200 * time.Millisecond, "FAIL", "FAIL"},
		{"never evicted, a 1.3s stall", []lagSample{{at(33 * time.Second), 1300 * time.Millisecond}}, 0, "FAIL", "FAIL"},
		{"evicted 1.2s late on time", nil, 41200 * time.Millisecond, "FAIL", "FAIL"},
	} {
		c := newStateCheck("registryState", []string{"w-1"}, "evicted", scenarios.Window{From: 30 * time.Second, To: 40 * time.Second, Mode: "sometime"})
		if tc.came > 0 {
			c.look(sc, &snapshot{t: tc.came, cpUp: map[string]bool{"cp-1": true},
				registry: map[string]map[string]workerapi.WorkerInfo{"cp-1": {"w-1": {Name: "w-1", State: workerapi.StateEvicted}}}})
		}
		r := &runner{sc: sc, opts: Options{TimeScale: 0.25}, t0: t0, lag: &hostLag{late: tc.late}}
		v := r.hostVerdict(c, Verdict{Name: tc.name, Verdict: tc.verdict, Detail: "what the daemons showed"})
		if v.Verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, v.Verdict, v.Detail, tc.want)
		}
	}
}

// A figure of the whole workload (admitted/s, lease-kill-smoke at scale 1) that disagrees is
// INCONCLUSIVE when the host was later than a workload check's budget while the workload ran:
// a 1.3s stall at 10s left 6 admitted instead of 4 (leases lost and queries admitted again).
// A shorter stall, one after the run, or a figure of no workload leave it a disagreement.
func TestHostMetricsWorkloadFigures(t *testing.T) {
	sc := load(t, "../chaos/testdata/lease-kill-smoke.yaml")
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		what string
		late []lagSample
		name string
		want bool
	}{
		{"a 1.3s stall", []lagSample{{t0.Add(10 * time.Second), 1300 * time.Millisecond}}, mAdmittedRate, true},
		{"a 1.3s stall, the engine's peak", []lagSample{{t0.Add(10 * time.Second), 1300 * time.Millisecond}}, peakMetric("c1"), true},
		{"a 300ms stall", []lagSample{{t0.Add(10 * time.Second), 300 * time.Millisecond}}, mAdmittedRate, false},
		{"a stall after the run", []lagSample{{t0.Add(20 * time.Second), 1300 * time.Millisecond}}, mAdmittedRate, false},
		{"not a workload figure", []lagSample{{t0.Add(10 * time.Second), 1300 * time.Millisecond}}, "evictions", false},
	} {
		r := &runner{sc: sc, opts: Options{TimeScale: 1}, t0: t0, lag: &hostLag{late: tc.late}, wl: &fleetWorkload{}}
		ms := []Metric{{Name: tc.name, Sim: 0.25, Real: 0.38}}
		r.hostMetrics(ms, newObserver())
		if got := ms[0].Inconclusive != ""; got != tc.want {
			t.Errorf("%s: inconclusive %v (%q), want %v", tc.what, got, ms[0].Inconclusive, tc.want)
		}
	}
}

// A busy host does not keep every process waiting alike: a worker's own probe that it reported
// late counts as the runner's wake-up would, for the registry states (one late heartbeat) and
// the workload's checks and figures; the runner on time and the workers on time leave the
// verdict alone; a cap broken stays a FAIL; each heartbeat's report counts once.
func TestHostVerdictCountsTheLagWorkersReport(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	reported := func(at, lag time.Duration) *hostLag {
		h := &hostLag{}
		h.daemonReported("w-1", t0.Add(at-100*time.Millisecond), lag, t0.Add(at))
		h.daemonReported("w-1", t0.Add(at-100*time.Millisecond), 0, t0.Add(at+10*time.Millisecond)) // the same beat again
		return h
	}
	if h := reported(8*time.Second, time.Second); len(h.daemons) != 1 {
		t.Fatalf("one heartbeat's report kept %d times", len(h.daemons))
	}
	lease := load(t, "../chaos/testdata/lease-kill-smoke.yaml")
	zero := 0
	reclaimed := newCount(lease, "leases held by w-1", scenarios.CountWindow{From: 10 * time.Second, AtMost: &zero}, nil)
	oneway := load(t, "../chaos/testdata/oneway-latency.yaml")
	healthy := newStateCheck("registryState", []string{"w-2"}, "healthy", scenarios.Window{From: 5 * time.Second, To: 90 * time.Second, Mode: "always"})
	for _, tc := range []struct {
		name  string
		sc    *scenarios.Scenario
		scale float64
		h     *hostLag
		check realCheck
		want  string
	}{
		{"a worker 1.2s late, a lease check", lease, 1, reported(8*time.Second, 1200*time.Millisecond), reclaimed, "INCONCLUSIVE"},
		{"a worker 300ms late, a lease check", lease, 1, reported(8*time.Second, 300*time.Millisecond), reclaimed, "FAIL"},
		{"a worker 1.2s late, the cap", lease, 1, reported(8*time.Second, 1200*time.Millisecond), &capCheck{engine: true}, "FAIL"},
		{"a worker 1.1s late, a registry state (budget 1s)", oneway, 0.25, reported(10*time.Second, 1100*time.Millisecond), healthy, "INCONCLUSIVE"},
		{"a worker 900ms late, a registry state", oneway, 0.25, reported(10*time.Second, 900*time.Millisecond), healthy, "FAIL"},
		{"nobody late", oneway, 0.25, &hostLag{}, healthy, "FAIL"},
	} {
		r := &runner{sc: tc.sc, opts: Options{TimeScale: tc.scale}, t0: t0, lag: tc.h}
		v := r.hostVerdict(tc.check, Verdict{Name: tc.name, Verdict: "FAIL", Detail: "what the daemons showed"})
		if v.Verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, v.Verdict, v.Detail, tc.want)
		}
		if tc.want == "INCONCLUSIVE" && !strings.Contains(v.Detail, "w-1 reported its own health probe") {
			t.Errorf("%s: detail %q does not name the worker's report", tc.name, v.Detail)
		}
	}
	r := &runner{sc: lease, opts: Options{TimeScale: 1}, t0: t0, lag: reported(8*time.Second, 1200*time.Millisecond), wl: &fleetWorkload{}}
	ms := []Metric{{Name: mAdmittedRate, Sim: 0.25, Real: 0.38}}
	r.hostMetrics(ms, newObserver())
	if ms[0].Inconclusive == "" {
		t.Errorf("admitted/s disagreeing after a worker reported its probe 1.2s late: not inconclusive")
	}
	if starve := load(t, "registry-starve.yaml"); (&runner{sc: starve}).daemonLagCounts() {
		t.Errorf("a file that starves a worker counts its probes' lag as the host's")
	}
}

// A late host takes health away and never gives it: a check that wanted a worker healthy and
// saw it so passes however late the host was; one that wanted it unhealthy, stale or evicted,
// or never healthy, is INCONCLUSIVE when the host was late enough to cause it.
func TestHostVerdictHealthyPassStands(t *testing.T) {
	sc := load(t, "../chaos/testdata/oneway-latency.yaml")
	t0 := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	stall := []lagSample{{t0.Add(10 * time.Second), 1300 * time.Millisecond}}
	win := scenarios.Window{From: 5 * time.Second, To: 90 * time.Second, Mode: "always"}
	for _, tc := range []struct {
		check *stateCheck
		want  string
	}{
		{newStateCheck("registryState", []string{"w-2"}, "healthy", win), "PASS"},
		{newStateCheck("registryState", []string{"w-2"}, "stale", win), "INCONCLUSIVE"},
		{newStateCheck("registryState", []string{"w-2"}, "healthy", scenarios.Window{From: 5 * time.Second, To: 90 * time.Second, Mode: "never"}), "INCONCLUSIVE"},
	} {
		r := &runner{sc: sc, opts: Options{TimeScale: 0.25}, t0: t0, lag: &hostLag{late: stall}}
		v := r.hostVerdict(tc.check, Verdict{Name: "c", Verdict: "PASS", Detail: "what the daemons showed"})
		if v.Verdict != tc.want {
			t.Errorf("%s %s %q passed on a late host: %s, want %s", tc.check.kind, tc.check.win.Mode, tc.check.want, v.Verdict, tc.want)
		}
	}
}

package chaos

import (
	"strings"
	"testing"
	"time"

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

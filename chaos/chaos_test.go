package chaos

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// timeScale of the real-process tests: a 2-minute scenario runs in 30 s (heartbeats every
// 500 ms: room for a machine loaded by other builds).
const timeScale = 0.25

func load(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load("../scenarios/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// runReal runs a scenario in chaos mode and fails on any failed check (real or simulated).
func runReal(t *testing.T, name string) *Report {
	t.Helper()
	return runRealFile(t, "../scenarios/"+name)
}

func runRealFile(t *testing.T, path string) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process chaos run skipped in -short mode")
	}
	sc, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	name := sc.Name
	rep, err := Run(context.Background(), sc, Options{TimeScale: timeScale, Seed: 1})
	if err != nil {
		if strings.Contains(err.Error(), "PostgreSQL unreachable") && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Log("\n" + out.String())
	if !rep.Supported() {
		t.Fatalf("%s unsupported: %v", name, rep.Unsupported)
	}
	if !rep.Sim.Pass() {
		t.Errorf("the simulation of %s failed", name)
	}
	if !rep.Pass() {
		t.Errorf("the real run of %s failed a check", name)
	}
	for _, c := range rep.Checks {
		if c.Verdict == "UNSUPPORTED" {
			t.Errorf("check %q unsupported: %s", c.Name, c.Detail)
		}
	}
	return rep
}

// assertAgree demands agreement of every metric seen in both runs, and that the wanted ones
// were seen.
func assertAgree(t *testing.T, rep *Report, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range rep.Metrics {
		seen[m.Name] = true
		if m.Missing != "" {
			t.Errorf("metric %q %s", m.Name, m.Missing)
			continue
		}
		if !m.Agree {
			t.Errorf("metric %q: sim %.2f, real %.2f (%+.1f%%): disagree (%s)", m.Name, m.Sim, m.Real, m.DiffPct, m.Rule)
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("metric %q missing; have %v", w, rep.Metrics)
		}
	}
}

func TestRegistryCrashRealAgreesWithSim(t *testing.T) {
	t.Parallel()
	rep := runReal(t, "registry-crash.yaml")
	assertAgree(t, rep, "evictions", "heartbeats received (all workers)", "w-1 evicted after last heartbeat (crash@30s)",
		"w-1 stale after last heartbeat (crash@30s)")
	for _, m := range rep.Metrics {
		if m.Name == "evictions" && m.Real != 1 {
			t.Errorf("real evictions %v, want 1", m.Real)
		}
	}
}

func TestRegistryPartitionRealAgreesWithSim(t *testing.T) {
	t.Parallel()
	rep := runReal(t, "registry-partition.yaml")
	assertAgree(t, rep, "evictions", "w-1 evicted after last heartbeat (partition@30s)", "w-1 new session after heal@1m10s")
}

func TestRegistryControlPlaneRestartRealAgreesWithSim(t *testing.T) {
	t.Parallel()
	rep := runReal(t, "registry-cp-restart.yaml")
	assertAgree(t, rep, "evictions", "heartbeats received (all workers)")
}

// Starvation is approximated with SIGSTOP/SIGCONT bursts: the checks must hold and the fleet's
// totals agree; how fast the health flips is logged, not asserted (the bursts are not the
// simulator's "every timer fires late").
func TestStarveApproximationRealChecksPass(t *testing.T) {
	t.Parallel()
	rep := runReal(t, "registry-starve.yaml")
	for _, m := range rep.Metrics {
		if m.Missing != "" {
			t.Errorf("metric %q %s", m.Name, m.Missing)
		} else if !m.Agree && !strings.Contains(m.Name, "starve") {
			t.Errorf("metric %q: sim %.2f, real %.2f (%+.1f%%): disagree", m.Name, m.Sim, m.Real, m.DiffPct)
		}
	}
}

// Latency toxics and a one-way cut (chaos/testdata: it exercises the proxy faults the registry
// files do not).
func TestOneWayCutAndLatencyRealAgreesWithSim(t *testing.T) {
	t.Parallel()
	rep := runRealFile(t, "testdata/oneway-latency.yaml")
	assertAgree(t, rep, "evictions", "w-1 evicted after last heartbeat (partition@20s)", "w-1 new session after heal@50s")
}

// Scenarios that need what real processes cannot do are reported, not run.
func TestUnsupportedScenariosAreReportedNotRun(t *testing.T) {
	for file, want := range map[string]string{
		"pingpong.yaml": `role "pingpong" is not supported in chaos`,
	} {
		sc := load(t, file)
		rep, err := Run(context.Background(), sc, Options{TimeScale: 0.1, Bin: "/nonexistent"})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if rep.Supported() || !strings.Contains(strings.Join(rep.Unsupported, "\n"), want) {
			t.Errorf("%s: unsupported %q, want a reason naming %q", file, rep.Unsupported, want)
		}
		if len(rep.Checks) != 0 || rep.Sim != nil {
			t.Errorf("%s: an unsupported scenario ran", file)
		}
	}
}

// An unknown check kind in a supported scenario is a verdict, not an error.
func TestPlanNamesUncheckableKinds(t *testing.T) {
	sc := load(t, "pingpong.yaml")
	_, uncheckable := Plan(sc, 0)
	if len(uncheckable) == 0 {
		t.Fatal("pings check reported checkable")
	}
	for name, why := range uncheckable {
		if !strings.Contains(why, "not supported in chaos") {
			t.Errorf("%s: %q", name, why)
		}
	}
}

func TestCompareRules(t *testing.T) {
	sc := load(t, "registry-partition.yaml") // heartbeat 2s, requestTimeout 1s: phase bound 3.2s
	got := map[string]Metric{}
	for _, m := range compare(sc,
		map[string]float64{"evictions": 0, "a after": 10, "b after": 0, "w new session after heal@1m": 0.3, "only sim": 1},
		map[string]float64{"evictions": 0, "a after": 12.5, "b after": 1, "w new session after heal@1m": 3.0, "only real": 1}) {
		got[m.Name] = m
	}
	check := func(name string, agree bool) {
		t.Helper()
		if m := got[name]; m.Agree != agree {
			t.Errorf("%s: %+v, want agree=%v", name, m, agree)
		}
	}
	check("evictions", true)                   // 0 and 0
	check("a after", false)                    // +25%
	check("b after", false)                    // from zero
	check("w new session after heal@1m", true) // both inside one heartbeat phase
	if !math.IsInf(got["b after"].DiffPct, 1) || got["a after"].DiffPct != 25 {
		t.Errorf("diffs: %+v %+v", got["b after"], got["a after"])
	}
	if got["only sim"].Missing == "" || got["only real"].Missing == "" {
		t.Errorf("one-sided metrics not marked missing: %+v %+v", got["only sim"], got["only real"])
	}
}

// The link proxy: the sniffer sees heartbeat tokens, a two-way partition refuses connections,
// a one-way cut stalls requests, heal restores.
func TestLinkFaultsAndSniffer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	defer srv.Close()
	start := time.Now()
	l, err := newLink("test-"+t.Name(), strings.TrimPrefix(srv.URL, "http://"), func() time.Duration { return time.Since(start) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	beat := func(token string, limit time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+l.addr()+"/worker/heartbeat", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, tok := range []string{"qfw_one", "qfw_one", "qfw_two"} {
		if err := beat(tok, 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(l.log.times()); got != 2 || l.log.last(time.Hour) != "qfw_two" {
		t.Fatalf("sniffer saw %d tokens, last %q; want 2, qfw_two", got, l.log.last(time.Hour))
	}

	l.cutUp, l.cutDown = true, true
	if err := l.apply(); err != nil {
		t.Fatal(err)
	}
	if err := beat("qfw_three", 2*time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("partitioned link answered: %v", err)
	}
	l.cutDown = false // one way: worker→control plane stalls
	if err := l.apply(); err != nil {
		t.Fatal(err)
	}
	if err := beat("qfw_three", 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("one-way cut link: %v, want a timeout", err)
	}
	if l.log.last(time.Hour) != "qfw_two" {
		t.Errorf("the sniffer saw a token the one-way cut dropped")
	}
	l.cutUp = false
	l.latUp = 100 * time.Millisecond
	if err := l.apply(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := beat("qfw_four", 2*time.Second); err != nil {
		t.Fatalf("healed link: %v", err)
	}
	if d := time.Since(t0); d < 100*time.Millisecond {
		t.Errorf("latency toxic: round trip %v, want >= 100ms", d)
	}
	if l.log.last(time.Hour) != "qfw_four" {
		t.Errorf("after heal the sniffer saw %q, want qfw_four", l.log.last(time.Hour))
	}
}

// The smoke of a lease scenario on real daemons and a real PostgreSQL engine (about 30 s): a
// worker killed while its queries run; the engine, sampled from pg_stat_activity, never runs
// more than the cap, and the real run's numbers agree with the simulator's.
func TestLeaseKillSmokeRealEngineWithinCap(t *testing.T) {
	t.Parallel()
	rep := runRealFile(t, "testdata/lease-kill-smoke.yaml")
	// Queue times are not compared here: a wait that times out takes the client's connection
	// time on top, which a loaded machine stretches.
	seen := 0
	for _, m := range rep.Metrics {
		switch m.Name {
		case peakMetric("c1"), mAdmittedRate:
			seen++
			if !m.Agree {
				t.Errorf("%s: sim %.2f, real %.2f: disagree", m.Name, m.Sim, m.Real)
			}
		}
		if m.Name == peakMetric("c1") && m.Real != 2 {
			t.Errorf("peak executing on PostgreSQL %v, want exactly the cap 2", m.Real)
		}
	}
	if seen != 2 {
		t.Errorf("metrics %v: want the engine's peak and admitted/s", rep.Metrics)
	}
}

package fleettest

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/queryflux/queryflux/fleetcheck"
	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/history/histfile"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/plan"
	"github.com/queryflux/queryflux/scenarios"
)

// The recorded fleet of the replay validation: one PostgreSQL cluster with cap 4 behind a
// control plane and three workers (queue: ordered); pgbench on every worker sends pg_sleep
// queries of 0.5-2.5 s at a Poisson rate (pgbench -R) that keeps the cluster about 96 % busy, so most queries wait.
// Queries last seconds so that the shared test machine's scheduling delays (tens to hundreds
// of milliseconds under load) stay small beside the queue times compared.
const (
	replayCap     = 4
	replayWorkers = 3
	replayRate    = "0.85" // queries per second per worker
	replayClients = 8
)

// replaySecs is the recording's length: 20 s in make test, REPLAY_SECS for the long form.
func replaySecs(t *testing.T) int {
	if s := os.Getenv("REPLAY_SECS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 5 {
			t.Fatalf("REPLAY_SECS %q: want an integer >= 5", s)
		}
		return n
	}
	return 20
}

// loopbackLatency is one way on loopback between Go HTTP peers, as the simulator's network.
const loopbackLatency = 100 * time.Microsecond

// TestReplayedHistoryAgreesWithTheRecording records a pgbench workload through a real fleet
// (control plane on PostgreSQL, real workers, the PostgreSQL engine), exports its history with
// `queryflux history export`, replays the file in the simulator with the same config (built by
// fleetcheck.Replay from the control plane's config file; each lease store call costs what the
// real control plane measured for it during the recording, storeCalibration), and holds
// admitted/s of the two within 20 %, and queue p50 and p99 within queueTolerance: 20 % in the
// long form (REPLAY_HOLD_QUEUE, set by scripts/replay-validate.sh), 50 % in the 20 s smoke. A
// 20 s recording of about 50 queries on the shared machine is at the mercy of whatever else
// runs there: over ten smoke runs (RESULTS.md, Replay of a recorded workload) p50 differed by
// -44.9 % to +24.3 % and p99 by -31.9 % to +40.1 %, while admitted/s stayed within 2.4 %; 50 %
// passes that spread and still fails a simulator that charges queries 10 % more than they took
// (a lease store twice as slow it does not see: RESULTS.md, planted errors). At 96 % of the cap
// busy the median wait hangs on the tens of milliseconds each slot hand-off costs (the
// release, the granting transaction, the waiting record's read and write before the grant is
// answered).
//
// A disagreement is recorded once more before it fails the test: one 20 s sample of about 50
// queries disagrees now and then on a median alone, a wrong simulator disagrees every time. So
// is a recording that did not queue: pgbench's Poisson arrivals sometimes send a light 20 s
// (34 queries and a queue p99 of 97 ms in one clean-clone CI run), a fleet that never queues
// sends two.
func TestReplayedHistoryAgreesWithTheRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	if apart := replayDisagreements(t, ""); len(apart) > 0 {
		t.Logf("the first recording disagrees with its replay (%s); recording once more", strings.Join(apart, "; "))
		if apart = replayDisagreements(t, ".2"); len(apart) > 0 {
			t.Errorf("the replay disagrees with its recording twice: %s", strings.Join(apart, "; "))
		}
	}
}

// replayDisagreements records, replays and returns the metrics that differ by more than
// their tolerance; a kept recording (REPLAY_KEEP) is kept with suffix after its name.
func replayDisagreements(t *testing.T, suffix string) (apart []string) {
	rec := recording(t, suffix)
	real := recordedMetrics(t, rec.history)

	cfg, err := config.Load(rec.config)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fleetcheck.Replay(cfg, rec.history, fleetcheck.ReplayOptions{Latency: loopbackLatency})
	if err != nil {
		t.Fatal(err)
	}
	cal := rec.calibration
	sc.Workload.ControlPlane = cal
	sim := simulatedMetrics(t, sc, real.span)
	var table strings.Builder
	st := cal.ServiceTimes
	fmt.Fprintf(&table, "recording %v, %d queries (%d workers, cap %d); simulator: seeds 1-%d pooled; lease store measured: acquire %v, release %v, contention %v, mark-denied %v, mark-granted %v\n",
		real.span.Round(time.Second), real.queries, replayWorkers, replayCap, replaySeeds, st[capacity.PathAcquire], st[capacity.PathReleaseBatch],
		st[capacity.StoreContention], st[capacity.StoreMarkDenied], st[capacity.StoreMarkGranted])
	fmt.Fprintf(&table, "| metric | real | sim | difference |\n|---|---|---|---|\n")
	queueTolerance := 0.50
	if os.Getenv("REPLAY_HOLD_QUEUE") != "" {
		queueTolerance = 0.20
	}
	for _, m := range []struct {
		name      string
		real, sim float64
		tolerance float64
	}{
		{"queue p50 (ms)", real.queueP50, sim.queueP50, queueTolerance},
		{"queue p99 (ms)", real.queueP99, sim.queueP99, queueTolerance},
		{"admitted/s", real.admittedPerSec, sim.admittedPerSec, 0.20},
	} {
		diff := relDiff(m.real, m.sim)
		if diff > m.tolerance {
			apart = append(apart, fmt.Sprintf("%s: real %.1f, simulated %.1f: %.1f %% apart, more than %.0f %%", m.name, m.real, m.sim, 100*diff, 100*m.tolerance))
		}
		fmt.Fprintf(&table, "| %s | %.1f | %.1f | %+.1f %% |\n", m.name, m.real, m.sim, 100*diff*sign(m.sim-m.real))
	}
	t.Log("\n" + table.String())
	if sim.queries != real.queries {
		t.Errorf("the simulator submitted %d queries, the recording has %d", sim.queries, real.queries)
	}
	if real.queueP99 < 100 {
		apart = append(apart, fmt.Sprintf("queue p99 %.0f ms: the recorded workload did not queue, so agreement says nothing", real.queueP99))
	}
	return apart
}

// replayRecording is what the simulator replays: the history export, the control plane's config
// file, and the lease store's calibration measured during the recording.
type replayRecording struct {
	history, config string
	calibration     *scenarios.Calibration
}

// A kept recording is its export at FILE and these beside it.
const (
	keptConfigSuffix      = ".controlplane.yaml"
	keptCalibrationSuffix = ".calibration.yaml"
)

// recording records a pgbench workload through a real fleet; REPLAY_KEEP=FILE keeps it (the
// export at FILE, the config and the calibration beside it; a second recording, made when the
// first disagreed, at FILE.2, so that the one that disagreed can still be replayed).
// REPLAY_FROM=FILE replays such a kept recording instead of recording one: the simulator's side
// of the comparison then changes only with the simulator, without the real fleet's run-to-run
// spread (an A/B of a simulator change, e.g. against the commit before it).
func recording(t *testing.T, suffix string) replayRecording {
	if from := os.Getenv("REPLAY_FROM"); from != "" {
		cal, err := scenarios.LoadCalibration(from + keptCalibrationSuffix)
		if err != nil {
			t.Fatalf("REPLAY_FROM %s: %v", from, err)
		}
		return replayRecording{history: from, config: from + keptConfigSuffix, calibration: cal}
	}
	if _, err := exec.LookPath("pgbench"); err != nil {
		t.Fatal("pgbench is not installed (Debian: postgresql-client)")
	}
	cpConfig, apiAddr, workers := startReplayFleet(t)
	runPgbench(t, workers, replaySecs(t))
	rec := replayRecording{history: filepath.Join(t.TempDir(), "history.csv"), config: cpConfig,
		calibration: storeCalibration(t, apiAddr)}
	exportHistory(t, apiAddr, rec.history)
	if keep := os.Getenv("REPLAY_KEEP"); keep != "" {
		keep += suffix
		cal, err := yaml.Marshal(rec.calibration)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			path string
			data []byte
		}{
			{keep, must(os.ReadFile(rec.history))},
			{keep + keptConfigSuffix, must(os.ReadFile(cpConfig))},
			{keep + keptCalibrationSuffix, cal},
		} {
			if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return rec
}

// storeCalibration is the simulated control plane's model, from what the real one's lease
// store measured during the recording (queryflux_capacity_store_seconds): each lease store call
// of the simulated control plane takes, on average, what the same call took on the real
// PostgreSQL lease table, the waiting record's reads and writes included. The other paths
// (registration, heartbeats) keep the built-in quiet-machine figures.
func storeCalibration(t *testing.T, apiAddr string) *scenarios.Calibration {
	body := daemontest.Get(t, "http://"+apiAddr+"/metrics", "")
	mean := func(op string) time.Duration {
		label := `op="` + op + `"`
		n := metricSum(body, "queryflux_capacity_store_seconds_count", label)
		if n == 0 {
			return 0
		}
		secs := metricSum(body, "queryflux_capacity_store_seconds_sum", label) / n
		return time.Duration(secs * float64(time.Second)).Round(time.Microsecond)
	}
	cal := plan.BuiltinCalibration()
	cal.ServiceTimes = map[string]time.Duration{
		capacity.PathAcquire: mean(capacity.StoreAcquire), capacity.PathReleaseBatch: mean(capacity.StoreRelease),
		capacity.PathRenew: mean(capacity.StoreRenew), capacity.StoreContention: mean(capacity.StoreContention),
		capacity.StoreMarkDenied: mean(capacity.StoreMarkDenied), capacity.StoreMarkGranted: mean(capacity.StoreMarkGranted),
	}
	if cal.ServiceTimes[capacity.PathAcquire] == 0 {
		t.Fatalf("the control plane measured no lease store acquire:\n%s", body)
	}
	return cal
}

// startReplayFleet starts the control plane and the workers with their history uplink on;
// it returns the control plane's config file, its admin address and the workers' postgres
// frontends.
func startReplayFleet(t *testing.T) (string, string, []string) {
	engineURL, db := engineDatabases(t)
	coordination := "coordination: {mode: controlPlane, queue: ordered, leaseTtlSecs: 10, driftMarginSecs: 2}"
	f := startEngineControlPlane(t, engineURL, db, coordination, replayCap, 60)
	var addrs []string
	for i := range replayWorkers {
		addr, _ := startPGWorker(t, fmt.Sprintf("w%d", i+1), f.apiAddr, coordination, "  historyUplink: {enabled: true, flushIntervalSecs: 1}\n")
		addrs = append(addrs, addr)
	}
	awaitPG(t, addrs...)
	return f.cpConfig, f.apiAddr, addrs
}

// runPgbench runs pgbench against every worker at once for secs seconds.
func runPgbench(t *testing.T, workers []string, secs int) {
	script := daemontest.WriteFile(t, "sleep.sql", "\\set ms random(500, 2500)\nSELECT pg_sleep(:ms / 1000.0);\n")
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	outs := make([][]byte, len(workers))
	for i, addr := range workers {
		host, port, _ := net.SplitHostPort(addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("pgbench", "-n", "-h", host, "-p", port, "-U", "queryflux", "-f", script,
				"-c", strconv.Itoa(replayClients), "-j", "2", "-R", replayRate, "-T", strconv.Itoa(secs), "pg")
			cmd.Env = append(os.Environ(), "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10")
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || !bytes.Contains(outs[i], []byte("number of failed transactions: 0")) {
			t.Fatalf("pgbench on %s: %v\n%s", workers[i], err, outs[i])
		}
		t.Logf("pgbench on %s:\n%s", workers[i], outs[i])
	}
}

// exportHistory waits until the history has stopped growing (the uplinks flushed), then
// exports it with the real CLI.
func exportHistory(t *testing.T, apiAddr, file string) {
	last, stable := -1, 0
	daemontest.Eventually(t, 60*time.Second, "the history stops growing", func() bool {
		out, err := exec.Command(daemontest.Binary(t), "history", "export", "--admin-url", "http://"+apiAddr,
			"--admin-token", adminToken, "-o", file).CombinedOutput()
		if err != nil {
			t.Logf("export: %v %s", err, out)
			return false
		}
		n := bytes.Count(must(os.ReadFile(file)), []byte("\n"))
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		time.Sleep(time.Second)
		return stable >= 2
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// replayMetrics are the compared numbers.
type replayMetrics struct {
	queueP50, queueP99, admittedPerSec float64
	queries                            int
	span                               time.Duration
}

// replaySeeds is how many seeds replay the recording. Their queries are pooled: the quantiles
// are the simulated distribution's, not a mean of each seed's (at a median between the queries
// that got a slot at once and those that waited, such a mean is a time no query had).
const replaySeeds = 10

// simulatedMetrics replays sc with seeds 1..replaySeeds: queue quantiles over their queries
// pooled, admitted/s their mean over the recording's span.
func simulatedMetrics(t *testing.T, sc *scenarios.Scenario, span time.Duration) replayMetrics {
	var m replayMetrics
	var queue []int64
	for seed := uint64(1); seed <= replaySeeds; seed++ {
		r := scenarios.Run(sc, seed, scenarios.RunOpts{})
		if !r.Pass() {
			t.Fatalf("simulated replay seed %d failed: %+v", seed, r.Checks)
		}
		queue = append(queue, r.Workload.QueueMs...)
		m.admittedPerSec += float64(r.Workload.Admitted) / span.Seconds() / replaySeeds
		m.queries = r.Workload.Submitted
	}
	m.queueP50, m.queueP99 = scenarios.Percentile(queue, 0.5), scenarios.Percentile(queue, 0.99)
	return m
}

// recordedMetrics computes them from the export as the simulator does from a run: queue
// quantiles over the queries allowed to wait, admitted = queries that got a slot, per second of
// the recording's span.
func recordedMetrics(t *testing.T, path string) replayMetrics {
	f, err := histfile.Read(bytes.NewReader(must(os.ReadFile(path))))
	if err != nil {
		t.Fatal(err)
	}
	var queue []int64
	admitted := 0
	for _, e := range f.Entries {
		if e.Cluster != "" {
			admitted++
		}
		if e.ErrorCode != query.CodeQueueFull {
			queue = append(queue, e.QueueMs)
		}
	}
	span := f.Span()
	return replayMetrics{queueP50: scenarios.Percentile(queue, 0.5), queueP99: scenarios.Percentile(queue, 0.99),
		admittedPerSec: float64(admitted) / span.Seconds(), queries: len(f.Entries), span: span}
}

func relDiff(real, sim float64) float64 {
	if real == 0 {
		return math.Abs(sim)
	}
	return math.Abs(sim-real) / real
}

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

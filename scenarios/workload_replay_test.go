package scenarios_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history/histfile"
	"github.com/queryflux/queryflux/scenarios"
)

// recording writes a history export: n queries per recorded worker (3 workers), one every
// 100 ms per worker, into bi (exec 200 ms + 10 ms per worker index) and etl (exec 1 s), and
// timed-out queries (no cluster, no exec time) into etl.
func recording(t *testing.T, dir string, n int) string {
	t.Helper()
	f := &histfile.File{Origin: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	for i := range n {
		for w := range 3 {
			e := histfile.Entry{ArrivalMs: int64(i*100 + w*7), Worker: fmt.Sprintf("w%d", w+1), Group: "bi", Cluster: "c1",
				Status: "succeeded", ExecMs: int64(200 + 10*w)}
			switch {
			case i%5 == 4:
				e.Group, e.Cluster, e.ExecMs = "etl", "c2", 1000
			case i%7 == 6:
				e.Group, e.Cluster, e.Status, e.ErrorCode, e.QueueMs, e.ExecMs = "etl", "", "failed", "57014", 3000, 0
			}
			f.Entries = append(f.Entries, e)
		}
	}
	path := filepath.Join(dir, "history.csv")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := histfile.Write(fh, f); err != nil {
		t.Fatal(err)
	}
	return path
}

func replayScenario(t *testing.T, dir, replay string) (*scenarios.Scenario, error) {
	t.Helper()
	body := `duration: 12s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 3}]
workload:
  ` + replay + `
  clusters:
    - {name: c1, cap: 100, duration: {dist: constant, min: 5s}}
    - {name: c2, cap: 100, duration: {dist: constant, min: 5s}}
  groups:
    - {name: bi, members: [c1], maxQueued: 100, waitTimeout: 10s}
    - {name: etl, members: [c2], maxQueued: 100, waitTimeout: 10s}
checks:
  - leasesWithinCap: {}
`
	path := filepath.Join(dir, "replay.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return scenarios.Load(path)
}

// TestReplaySubmitsTheRecording: without contention the simulated fleet submits every recorded
// query inside the run, each into its group, and the engine runs each for its recorded time
// (timed-out ones draw a recorded time of their group, never the cluster's own 5 s).
func TestReplaySubmitsTheRecording(t *testing.T) {
	dir := t.TempDir()
	recording(t, dir, 100) // 300 queries over 9.9 s
	sc, err := replayScenario(t, dir, "replay: history.csv")
	if err != nil {
		t.Fatal(err)
	}
	r := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if !r.Pass() {
		t.Fatalf("run failed: %+v", r.Checks)
	}
	w := r.Workload
	bi, etl := w.Groups["bi"], w.Groups["etl"]
	if w.Submitted != 300 || bi.Submitted+etl.Submitted != 300 || etl.Submitted != 60+36 {
		t.Fatalf("submitted %d (bi %d, etl %d): want 300, etl 96", w.Submitted, bi.Submitted, etl.Submitted)
	}
	if bi.ExecP50Ms != 210 || bi.ExecP99Ms != 220 || etl.ExecP99Ms != 1000 {
		t.Fatalf("exec quantiles bi p50 %v p99 %v, etl p99 %v: want 210, 220 and 1000 (the recorded times)", bi.ExecP50Ms, bi.ExecP99Ms, etl.ExecP99Ms)
	}
	for name, pw := range w.PerWorker {
		if pw[1] != 100 {
			t.Fatalf("%s submitted %d, want 100 (one recorded worker each)", name, pw[1])
		}
	}
	again := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if again.TraceHash != r.TraceHash {
		t.Fatalf("same seed, different trace: %s %s", r.TraceHash, again.TraceHash)
	}
}

// TestReplayScaleAndWorkers: scale 2 plays the recording twice as fast (all 600 queries of a
// 19.9 s recording in the 12 s run), and workers: 6 spreads each recorded worker's queries over
// two simulated workers.
func TestReplayScaleAndWorkers(t *testing.T) {
	dir := t.TempDir()
	recording(t, dir, 200)
	sc, err := replayScenario(t, dir, "replay: history.csv\n  scale: 2.0\n  workers: 6")
	if err != nil {
		t.Fatal(err)
	}
	r := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if r.Workload.Submitted != 600 || r.Workload.Workers != 6 {
		t.Fatalf("submitted %d on %d workers: want 600 on 6", r.Workload.Submitted, r.Workload.Workers)
	}
	for name, pw := range r.Workload.PerWorker {
		if pw[1] != 100 {
			t.Fatalf("%s submitted %d, want 100 (half of a recorded worker's 200)", name, pw[1])
		}
	}
}

// TestReplayBadInputIsNamed: a missing file, a malformed line, a group the workload does not
// have, a bad scale and a recording outside the run are refused with what is wrong.
func TestReplayBadInputIsNamed(t *testing.T) {
	dir := t.TempDir()
	path := recording(t, dir, 10)
	good, _ := os.ReadFile(path)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("badline.csv", string(good)+"12,w1,bi,c1,succeeded,,oops,3\n")
	write("badgroup.csv", strings.Replace(string(good), ",etl,", ",reports,", 1))
	write("late.csv", histfile.Magic+"\n# origin 2026-12-01T12:00:00Z\n"+strings.Join(histfile.Columns, ",")+"\n20000,w1,bi,c1,succeeded,,0,5\n")
	for _, c := range []struct{ replay, want string }{
		{"replay: nope.csv", "workload.replay: open"},
		{"replay: badline.csv", "line 34: queue_ms \"oops\""},
		{"replay: badgroup.csv", `group "reports" (arrival_ms 400) is not a workload group (bi, etl)`},
		{"replay: history.csv\n  scale: -1", "workload.scale -1: must be > 0"},
		{"replay: late.csv", "no routed query arrives within the scenario's duration"},
		{"replay: history.csv\n  workers: -2", "workload.workers -2"},
	} {
		if _, err := replayScenario(t, dir, c.replay); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.replay, err, c.want)
		}
	}
}

// BenchmarkReplayBoot: a fleet of 1,000 simulated workers sharing a recording boots and runs
// one virtual second; each worker looks up its share of the replay at boot.
func BenchmarkReplayBoot(b *testing.B) {
	dir := b.TempDir()
	recording(&testing.T{}, dir, 20)
	sc, err := replayScenario(&testing.T{}, dir, "replay: history.csv\n  workers: 1000")
	if err != nil {
		b.Fatal(err)
	}
	sc.Duration = time.Second
	for b.Loop() {
		scenarios.Run(sc, 1, scenarios.RunOpts{})
	}
}

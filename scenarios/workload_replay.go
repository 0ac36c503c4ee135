package scenarios

// A workload that replays a history export (queryflux history export): the loader reads the
// file once (role code never opens it), each recorded query is submitted by one simulated worker
// at its arrival time divided by the scale, into its recorded group, and runs on the simulated
// engine for its recorded execution time (a `select pg_sleep(S)` statement, which the simulated
// engine runs for S seconds as PostgreSQL does).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/history/histfile"
	"github.com/queryflux/queryflux/node/env"
)

// replayed is a loaded replay: the export and what the loader derived from it.
type replayed struct {
	file *histfile.File
	// workerIndex is each recorded worker's position by first arrival.
	workerIndex map[string]int
	// durations are the recorded execution times of each group's queries that ran, the pool a
	// query without one (it timed out waiting, or was refused) draws from.
	durations map[string][]int64
	// skipped counts entries not replayed, by reason.
	skipped map[string]int
}

// loadReplay reads wl.Replay (relative to the scenario file) and checks it against the
// workload's groups.
func (wl *Workload) loadReplay(sc *Scenario) error {
	if wl.Scale == 0 {
		wl.Scale = 1
	}
	if wl.Scale < 0 {
		return fmt.Errorf("workload.scale %v: must be > 0 (2 replays the recording twice as fast)", wl.Scale)
	}
	if wl.Replay == "" {
		return nil
	}
	path := wl.Replay
	if !filepath.IsAbs(path) && sc.Path != "" {
		path = filepath.Join(filepath.Dir(sc.Path), path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("workload.replay: %w", err)
	}
	defer fh.Close()
	f, err := histfile.Read(fh)
	if err != nil {
		return fmt.Errorf("workload.replay %s: %w", path, err)
	}
	rp := &replayed{file: f, workerIndex: map[string]int{}, durations: map[string][]int64{}, skipped: map[string]int{}}
	groups := map[string]bool{}
	for _, g := range wl.Groups {
		groups[g.Name] = true
	}
	inside := 0
	for _, e := range f.Entries {
		if _, ok := rp.workerIndex[e.Worker]; !ok {
			rp.workerIndex[e.Worker] = len(rp.workerIndex)
		}
		switch {
		case e.Group == "":
			continue
		case !groups[e.Group]:
			return fmt.Errorf("workload.replay %s: group %q (arrival_ms %d) is not a workload group (%s)", path, e.Group, e.ArrivalMs, strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
		}
		if ran(e) {
			rp.durations[e.Group] = append(rp.durations[e.Group], e.ExecMs)
		}
		if wl.replayAt(e) < sc.Duration {
			inside++
		}
	}
	if inside == 0 {
		return fmt.Errorf("workload.replay %s: no routed query arrives within the scenario's duration %v (first at %v after scale %v)",
			path, sc.Duration, wl.replayAt(f.Entries[0]), wl.Scale)
	}
	wl.replayed = rp
	return nil
}

// ran reports whether the entry's execution time was measured (it got a slot and ran).
func ran(e histfile.Entry) bool {
	return e.Cluster != "" && (e.ExecMs > 0 || e.Status == "succeeded")
}

// replayAt is the entry's virtual arrival time.
func (wl *Workload) replayAt(e histfile.Entry) time.Duration {
	return time.Duration(float64(time.Duration(e.ArrivalMs)*time.Millisecond) / wl.Scale)
}

// replayQuery is one query a simulated worker submits.
type replayQuery struct {
	at    time.Duration
	group string
	// execMs is the recorded execution time; -1: draw one from the group's recorded ones.
	execMs int64
}

// replaySchedules splits the replay over the n workers: the k-th query of the recorded worker
// at index r goes to worker (r + R*k) mod n (R recorded workers), so n = R keeps every
// query on its own worker, and more workers share each recorded worker's queries round robin.
func (rp *replayed) schedules(wl *Workload, n int, end time.Duration) [][]replayQuery {
	out := make([][]replayQuery, n)
	seen := map[string]int{}
	r := len(rp.workerIndex)
	for _, e := range rp.file.Entries {
		k := seen[e.Worker]
		seen[e.Worker]++
		at := wl.replayAt(e)
		if e.Group == "" || at >= end {
			continue
		}
		q := replayQuery{at: at, group: e.Group, execMs: -1}
		if ran(e) {
			q.execMs = e.ExecMs
		}
		i := (rp.workerIndex[e.Worker] + r*k) % n
		out[i] = append(out[i], q)
	}
	return out
}

// replaySchedule is the named worker's share of the replay in this run, and whether it has
// one (it is not a worker of the fleet). The fleet is resolved and the recording split once
// per run: every worker of a fleet of thousands looks its own share up at boot.
func replaySchedule(w *World, name string) ([]replayQuery, bool) {
	wl := w.Scenario.Workload
	byName := w.Durable("workload/replay", func() any {
		members, _ := w.Scenario.Resolve("workers")
		all := wl.replayed.schedules(wl, len(members), w.Scenario.Duration)
		byName := make(map[string][]replayQuery, len(members))
		for i, m := range members {
			byName[m] = all[i]
		}
		return byName
	}).(map[string][]replayQuery)
	qs, ok := byName[name]
	return qs, ok
}

// replay submits the worker's queries at their times (after a restart, from where it is now).
func (g generator) replay(ctx context.Context, qs []replayQuery, durations map[string][]int64) {
	i, _ := slices.BinarySearchFunc(qs, g.w.Sim.Elapsed(), func(q replayQuery, t time.Duration) int { return cmp.Compare(q.at, t) })
	for ; i < len(qs); i++ {
		q := qs[i]
		if wait := q.at - g.w.Sim.Elapsed(); wait > 0 && g.e.Sleep(ctx, wait) != nil {
			return
		}
		g.submit(ctx, q.group, sleepSQL(q.execMs, durations[q.group], g.e.Rand()))
	}
}

// sleepSQL is the statement that runs for ms milliseconds on the simulated engine (as on
// PostgreSQL); ms < 0 draws one of the recorded times, or, with none, lets the cluster's own
// duration distribution decide.
func sleepSQL(ms int64, pool []int64, r env.Rand) string {
	if ms < 0 {
		if len(pool) == 0 {
			return "select 1"
		}
		ms = pool[r.Int64N(int64(len(pool)))]
	}
	return fmt.Sprintf("select pg_sleep(%d.%03d)", ms/1000, ms%1000)
}

// ReplayTraffic is the recorded traffic of a replaying workload, per group, as the simulator
// should reproduce it: queries per second (the recording's, times the scale) and the
// recorded execution-time quantiles.
type ReplayTraffic struct {
	Window time.Duration                 // the replay's span in virtual time
	Groups map[string]ReplayGroupTraffic // by group
}

// ReplayGroupTraffic is one group's recorded traffic.
type ReplayGroupTraffic struct {
	Queries   int     `json:"queries"`
	PerSec    float64 `json:"per_sec"`
	ExecP50Ms float64 `json:"exec_p50_ms"`
	ExecP90Ms float64 `json:"exec_p90_ms"`
	ExecP99Ms float64 `json:"exec_p99_ms"`
}

// Traffic is the recording's traffic inside the run (nil without a replay).
func (wl *Workload) Traffic(runFor time.Duration) *ReplayTraffic {
	rp := wl.replayed
	if rp == nil {
		return nil
	}
	t := &ReplayTraffic{Groups: map[string]ReplayGroupTraffic{}}
	counts := map[string]int{}
	for _, e := range rp.file.Entries {
		at := wl.replayAt(e)
		if e.Group == "" || at >= runFor || at < wl.Warmup {
			continue
		}
		counts[e.Group]++
		t.Window = max(t.Window, at)
	}
	secs := (t.Window - wl.Warmup).Seconds()
	for _, g := range slices.Sorted(maps.Keys(counts)) {
		d := rp.durations[g]
		gt := ReplayGroupTraffic{Queries: counts[g], ExecP50Ms: Percentile(d, 0.5), ExecP90Ms: Percentile(d, 0.9), ExecP99Ms: Percentile(d, 0.99)}
		if secs > 0 {
			gt.PerSec = float64(counts[g]) / secs
		}
		t.Groups[g] = gt
	}
	return t
}

// UseReplay makes the workload replay the export at path instead of its arrivals.
func (sc *Scenario) UseReplay(path string, scale float64) error {
	if sc.Workload == nil {
		return fmt.Errorf("%s: no workload: section to replay history into", sc.Path)
	}
	wl := *sc.Workload
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	wl.Replay, wl.Scale, wl.Arrivals, wl.replayed = abs, scale, nil, nil
	if err := wl.loadReplay(sc); err != nil {
		return err
	}
	sc.Workload = &wl
	return nil
}

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

// replaySchedule is worker idx's share of the replay in this run (computed once per run).
func replaySchedule(w *World, idx, n int) []replayQuery {
	wl := w.Scenario.Workload
	all := w.Durable("workload/replay", func() any {
		return wl.replayed.schedules(wl, n, w.Scenario.Duration)
	}).([][]replayQuery)
	return all[idx]
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

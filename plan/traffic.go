package plan

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/queryflux/queryflux/scenarios"
)

// TrafficRow compares one group's replayed traffic with the recording it replays: how far
// the simulated fleet's arrivals and execution times are from what was recorded.
type TrafficRow struct {
	Group    string                       `json:"group"`
	Recorded scenarios.ReplayGroupTraffic `json:"recorded"`
	// Replayed are the runs' means (every point, every seed).
	Replayed scenarios.ReplayGroupTraffic `json:"replayed"`
}

// traffic is the comparison for a replaying scenario (nil otherwise).
func traffic(sc *scenarios.Scenario, results [][]*scenarios.Result) []TrafficRow {
	rec := sc.Workload.Traffic(sc.Duration)
	if rec == nil {
		return nil
	}
	secs := (rec.Window - sc.Workload.Warmup).Seconds()
	var rows []TrafficRow
	for _, g := range slices.Sorted(maps.Keys(rec.Groups)) {
		row := TrafficRow{Group: g, Recorded: rec.Groups[g]}
		n := 0.0
		for _, rs := range results {
			for _, r := range rs {
				n++
				gs := r.Workload.Groups[g]
				row.Replayed.Queries += gs.Submitted
				row.Replayed.ExecP50Ms += gs.ExecP50Ms
				row.Replayed.ExecP90Ms += gs.ExecP90Ms
				row.Replayed.ExecP99Ms += gs.ExecP99Ms
			}
		}
		if n > 0 {
			row.Replayed.Queries = int(math.Round(float64(row.Replayed.Queries) / n))
			row.Replayed.ExecP50Ms /= n
			row.Replayed.ExecP90Ms /= n
			row.Replayed.ExecP99Ms /= n
		}
		if secs > 0 {
			row.Replayed.PerSec = float64(row.Replayed.Queries) / secs
		}
		rows = append(rows, row)
	}
	return rows
}

// writeTraffic prints the comparison: per group, queries per second and execution-time
// quantiles, recorded beside replayed, with the relative difference.
func writeTraffic(out io.Writer, rows []TrafficRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(out, "replayed traffic against the recording (rates over the replay window, times the scale):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join([]string{"GROUP", "QUERIES/s rec", "replayed", "diff", "EXEC p50 ms rec", "replayed", "EXEC p90 ms rec", "replayed", "EXEC p99 ms rec", "replayed", "max diff", ""}, "\t"))
	for _, r := range rows {
		d := []float64{rel(r.Recorded.PerSec, r.Replayed.PerSec), rel(r.Recorded.ExecP50Ms, r.Replayed.ExecP50Ms),
			rel(r.Recorded.ExecP90Ms, r.Replayed.ExecP90Ms), rel(r.Recorded.ExecP99Ms, r.Replayed.ExecP99Ms)}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%+.1f%%\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f%%\t\n", r.Group,
			r.Recorded.PerSec, r.Replayed.PerSec, 100*d[0], r.Recorded.ExecP50Ms, r.Replayed.ExecP50Ms,
			r.Recorded.ExecP90Ms, r.Replayed.ExecP90Ms, r.Recorded.ExecP99Ms, r.Replayed.ExecP99Ms, 100*maxAbs(d))
	}
	tw.Flush()
}

func rel(rec, got float64) float64 {
	if rec == 0 {
		return got
	}
	return (got - rec) / rec
}

func maxAbs(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

package chaos

import (
	"maps"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/scenarios"
)

// The workload's headline metrics, named the same for both runs. Units other than seconds are
// listed in metricUnits.
const (
	mAdmittedRate = "admitted/s"
	mQueueP50     = "queue p50"
	mQueueP99     = "queue p99"
	mFairness     = "Jain's index of admitted share"
	mStored       = "history stored"
	mDropped      = "history dropped"
	mConfigActive = "config edit-to-active, every worker"
)

func peakMetric(cluster string) string { return "peak executing on the engine " + cluster }

func cacheMetric(group string) string { return "cache hit rate, group " + group }

var metricUnits = map[string]string{
	"evictions": "count", "heartbeats received (all workers)": "count",
	mAdmittedRate: "1/s", mFairness: "index", mStored: "records", mDropped: "records",
}

// isWorkloadMetric reports whether name is one of workloadHeadline's figures of the whole
// workload.
func isWorkloadMetric(name string) bool {
	switch name {
	case mAdmittedRate, mQueueP50, mQueueP99, mFairness, mStored, mDropped:
		return true
	}
	return strings.HasPrefix(name, peakMetric("")) || strings.HasPrefix(name, cacheMetric(""))
}

func metricUnit(name string) string {
	if u, ok := metricUnits[name]; ok {
		return u
	}
	if strings.HasPrefix(name, peakMetric("")) {
		return "queries"
	}
	if strings.HasPrefix(name, cacheMetric("")) {
		return "share"
	}
	return "s"
}

// workloadHeadline are a run's workload figures: admissions per second, queue p50/p99, Jain's
// index, the engine's peak per cluster, and with an uplink what history stored and dropped.
func workloadHeadline(sc *scenarios.Scenario, s *scenarios.WorkloadSummary, hist *[2]int) map[string]float64 {
	m := map[string]float64{}
	if s == nil {
		return m
	}
	m[mAdmittedRate] = s.AdmittedPerSec
	m[mQueueP50] = s.QueueP50Ms / 1000
	m[mQueueP99] = s.QueueP99Ms / 1000
	if sc.Workload.Coordination.Mode != "local" {
		m[mFairness] = s.Fairness
	}
	for _, c := range slices.Sorted(maps.Keys(s.MaxExecuting)) {
		m[peakMetric(c)] = float64(s.MaxExecuting[c])
	}
	if hist != nil {
		m[mStored], m[mDropped] = float64(hist[0]), float64(hist[1])
	}
	for _, g := range sc.Workload.Groups {
		if gs, ok := s.Groups[g.Name]; ok && g.Cache != nil {
			m[cacheMetric(g.Name)] = gs.CacheHitRate
		}
	}
	return m
}

// sums are the history totals over the workers (nil when the scenario has no uplink).
func (h historyTotals) sums() *[2]int {
	if h.stored == nil {
		return nil
	}
	var out [2]int
	for _, n := range h.stored {
		out[0] += n
	}
	for _, n := range h.dropped {
		out[1] += n
	}
	return &out
}

// simHistory reads the simulated stores and uplinks (nil without an uplink).
func simHistory(w *scenarios.World) *[2]int {
	if w.Scenario.Workload == nil || w.Scenario.Workload.History == nil {
		return nil
	}
	var out [2]int
	for _, s := range w.Scenario.Nodes() {
		switch s.Role {
		case "controlplane":
			out[0] += scenarios.HistoryStoreOf(w, s.Name).Len()
		case "worker":
			for _, n := range scenarios.HistoryTrackerOf(w, s.Name).Dropped {
				out[1] += n
			}
		}
	}
	return &out
}

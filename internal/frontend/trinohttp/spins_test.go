package trinohttp

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/rawconn"
)

// TestSpinWaitsAreScrapedByOutcome: queryflux_spin_waits_total reads each of rawconn's counts
// under its own outcome, and a second registration on the same registry (another server of
// the node) neither panics nor counts apart.
func TestSpinWaitsAreScrapedByOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	counts := rawconn.SpinCounts{Answered: 11, Waited: 22, NotIdle: 33, SlowPeer: 44}
	registerSpins(reg, func() rawconn.SpinCounts { return counts })
	registerSpins(reg, func() rawconn.SpinCounts { return rawconn.SpinCounts{} })
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "queryflux_spin_waits_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					got[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]float64{"answered": 11, "waited": 22, "not_idle": 33, "slow_peer": 44}
	if len(got) != len(want) {
		t.Fatalf("scraped %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("scraped %v, want %v", got, want)
			break
		}
	}
}

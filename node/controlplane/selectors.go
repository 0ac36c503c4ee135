package controlplane

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/config"
)

// selectorUnmatchedDesc is a group whose workerSelector (its own or a member cluster's) no
// online worker satisfies: every query routed to it fails, wherever it arrives.
var selectorUnmatchedDesc = prometheus.NewDesc("queryflux_selector_unmatched",
	"1 when no online worker's labels satisfy the cluster group's workerSelector (its own or its members'), so no worker serves it; 0 when one does. Only groups with a selector appear.",
	[]string{"group"}, nil)

// selectorCollector computes queryflux_selector_unmatched at each scrape from the published
// snapshot and the registry, so it is never behind either.
type selectorCollector struct {
	cp  *ControlPlane
	srv *ConfigServer
}

func (c selectorCollector) Describe(ch chan<- *prometheus.Desc) { ch <- selectorUnmatchedDesc }

func (c selectorCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.srv.Current()
	if snap == nil {
		return
	}
	unmatched := map[string]bool{}
	for _, g := range snap.Unserved(c.cp.OnlineLabels()) {
		unmatched[g.Name] = true
	}
	for _, name := range snap.SelectorGroups() {
		v := 0.0
		if unmatched[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(selectorUnmatchedDesc, prometheus.GaugeValue, v, name)
	}
}

// OnlineLabels is the labels of every online worker, in name order.
func (cp *ControlPlane) OnlineLabels() []map[string]string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var out []map[string]string
	for _, name := range cp.sortedNames() {
		if en := cp.workers[name]; en.life.Online() {
			out = append(out, en.rec.Labels)
		}
	}
	return out
}

// UnmatchedSelectors is the groups of the published snapshot that no online worker serves,
// with the selector each needs (nil before the first Publish).
func (s *ConfigServer) UnmatchedSelectors(cp *ControlPlane) []config.WithheldGroup {
	snap := s.Current()
	if snap == nil {
		return nil
	}
	return snap.Unserved(cp.OnlineLabels())
}

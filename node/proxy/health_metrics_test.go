package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// queryflux_cluster_healthy follows each health check: 1 for a cluster that answers, 0 while
// its ping fails (each failure counted); a configuration that drops a cluster drops its series.
func TestClusterHealthIsAMetric(t *testing.T) {
	h := newHarness(t)
	a := &pingFailEngine{fakeEngine: fakeEngine{rows: 1}, down: true}
	h.activate(oneGroup(Failover, 0, 0, cl("a", 5, a), cl("b", 5, &fakeEngine{rows: 1})))
	healthy := func(name string) float64 { return testutil.ToFloat64(h.core.metrics.healthy.WithLabelValues(name)) }
	if healthy("a") != 1 || healthy("b") != 1 {
		t.Fatalf("before any check: a %v, b %v; want both 1 (clusters start healthy)", healthy("a"), healthy("b"))
	}
	h.core.CheckHealth(t.Context(), time.Second)
	h.core.CheckHealth(t.Context(), time.Second)
	if healthy("a") != 0 || healthy("b") != 1 {
		t.Fatalf("a down: a %v, b %v; want 0 and 1", healthy("a"), healthy("b"))
	}
	if n := testutil.ToFloat64(h.core.metrics.healthFails.WithLabelValues("a")); n != 2 {
		t.Fatalf("a's failed checks counted %v; want 2", n)
	}
	a.down = false
	h.core.CheckHealth(t.Context(), time.Second)
	if healthy("a") != 1 {
		t.Fatalf("a recovered: %v; want 1", healthy("a"))
	}
	h.activate(oneGroup(Failover, 0, 0, cl("b", 5, &fakeEngine{rows: 1})))
	if err := testutil.CollectAndCompare(h.core.metrics.healthy, strings.NewReader(`
# HELP queryflux_cluster_healthy 1 while the cluster's last health check answered, 0 while it failed (its groups skip it); enabled clusters of the active configuration only.
# TYPE queryflux_cluster_healthy gauge
queryflux_cluster_healthy{cluster="b"} 1
`)); err != nil {
		t.Fatalf("after a configuration without a: %v", err)
	}
}

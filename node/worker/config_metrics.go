package worker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/promreg"
)

// configMetrics are the config sync's series on the worker's /metrics.
type configMetrics struct {
	activateFailures prometheus.Counter
}

// configMetricsKey keys the config sync's metric set on a shared registry (promreg.Once).
type configMetricsKey struct{}

func (s *ConfigSync) registerMetrics(reg prometheus.Registerer) {
	s.metrics = promreg.Once(reg, configMetricsKey{}, func() configMetrics { return s.buildMetrics(reg) })
}

func (s *ConfigSync) buildMetrics(reg prometheus.Registerer) configMetrics {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queryflux_config_reload_failures_total",
		Help: "Config revisions refused, by stage (worker_activate: strict compile or apply on a worker).",
	}, []string{"stage"})
	stale := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "queryflux_worker_config_stale",
		Help: "1 while the active config was not confirmed by the control plane (a peer's copy), else 0.",
	}, func() float64 {
		if s.Stale() {
			return 1
		}
		return 0
	})
	// A worker has one config sync; a second one (tests build several) reuses the first's series.
	failures = promreg.Register(reg, failures)
	promreg.Register(reg, stale)
	return configMetrics{activateFailures: failures.WithLabelValues("worker_activate")}
}

// Stale reports whether the active config is a copy the control plane has not confirmed.
func (s *ConfigSync) Stale() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.source != "" && s.source != "controlPlane"
}

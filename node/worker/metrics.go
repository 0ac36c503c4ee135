package worker

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/promreg"
)

type metrics struct {
	healthTransitions *prometheus.CounterVec
	loopLag           prometheus.Gauge
	heartbeats        *prometheus.CounterVec
	registrations     *prometheus.CounterVec
}

// metricsKey keys the worker's metric set on a shared registry (promreg.Once).
type metricsKey struct{}

func newMetrics(reg prometheus.Registerer) *metrics {
	return promreg.Once(reg, metricsKey{}, func() *metrics { return buildMetrics(reg) })
}

func buildMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		healthTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_worker_health_transitions_total",
			Help: "Self-health state changes, by the state entered.",
		}, []string{"state"}),
		loopLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queryflux_worker_loop_lag_seconds",
			Help: "How late the duty loop's timer woke for the last self-health probe.",
		}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_worker_heartbeats_total",
			Help: "Heartbeats sent to the control plane, by result.",
		}, []string{"result"}),
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_worker_registrations_total",
			Help: "Registration attempts with the control plane, by result.",
		}, []string{"result"}),
	}
	m.healthTransitions = promreg.Register(reg, m.healthTransitions)
	m.loopLag = promreg.Register(reg, m.loopLag)
	m.heartbeats = promreg.Register(reg, m.heartbeats)
	m.registrations = promreg.Register(reg, m.registrations)
	return m
}

func replaceAll(s, secret string) string { return strings.ReplaceAll(s, secret, "[redacted]") }

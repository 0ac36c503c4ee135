package forward

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/promreg"
)

type metrics struct {
	forwards *prometheus.CounterVec
	received *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_forwards_total",
			Help: "Requests this worker forwarded to the worker owning their query, by protocol and outcome (ok, owner_unknown, owner_unreachable).",
		}, []string{"protocol", "outcome"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_forwards_received_total",
			Help: "Forwarded requests this worker received from peers, by result (ok; refused: no valid proof of the worker secret; refused_clock: a true proof dated more than ProofAgeMax from this worker's clock; refused_address: a true proof naming an address this worker does not advertise, relayed from a stale peer address).",
		}, []string{"result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "queryflux_forward_seconds",
			Help:    "Time from forwarding a request to the owner's first answer, by protocol.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"protocol"}),
	}
	m.forwards = promreg.Register(reg, m.forwards)
	m.received = promreg.Register(reg, m.received)
	m.latency = promreg.Register(reg, m.latency)
	return m
}

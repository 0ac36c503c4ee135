package worker

import (
	"fmt"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// HealthMonitor is the self-health state machine as plain data: Flips consecutive probes whose
// lag is over Threshold make the worker unhealthy, Flips consecutive clean probes make it
// healthy again.
type HealthMonitor struct {
	Threshold time.Duration
	Flips     int
	State     string // workerapi.HealthHealthy or HealthUnhealthy
	Since     time.Time
	LastLag   time.Duration
	bad, good int // consecutive probes over / under the threshold
}

// NewHealthMonitor starts healthy at now.
func NewHealthMonitor(threshold time.Duration, flips int, now time.Time) HealthMonitor {
	if threshold <= 0 || flips <= 0 {
		panic(fmt.Sprintf("worker: health monitor needs threshold > 0 and flips > 0, got %v and %d", threshold, flips))
	}
	return HealthMonitor{Threshold: threshold, Flips: flips, State: workerapi.HealthHealthy, Since: now}
}

// Observe records one probe's lag at now and reports whether the state changed.
func (h *HealthMonitor) Observe(now time.Time, lag time.Duration) bool {
	h.LastLag = lag
	if lag > h.Threshold {
		h.bad, h.good = h.bad+1, 0
	} else {
		h.bad, h.good = 0, h.good+1
	}
	switch {
	case h.State == workerapi.HealthHealthy && h.bad >= h.Flips:
		h.State, h.Since = workerapi.HealthUnhealthy, now
		return true
	case h.State == workerapi.HealthUnhealthy && h.good >= h.Flips:
		h.State, h.Since = workerapi.HealthHealthy, now
		return true
	}
	return false
}

// Status is the monitor as the heartbeat carries it.
func (h *HealthMonitor) Status() workerapi.HealthStatus {
	return workerapi.HealthStatus{State: h.State, LoopLagSeconds: h.LastLag.Seconds(), Since: h.Since}
}

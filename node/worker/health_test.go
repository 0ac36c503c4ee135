package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

func TestHealthMonitorTable(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		lags   []time.Duration
		states string // state after each probe: h healthy, u unhealthy
	}{
		{"clean probes stay healthy", []time.Duration{0, 10 * ms, 250 * ms}, "hhh"},
		{"three slow probes flip", []time.Duration{300 * ms, 300 * ms, 300 * ms}, "hhu"},
		{"a clean probe resets the count", []time.Duration{300 * ms, 300 * ms, 0, 300 * ms, 300 * ms}, "hhhhh"},
		{"three clean probes recover", []time.Duration{300 * ms, 300 * ms, 300 * ms, 0, 0, 0}, "hhuuuh"},
		{"a slow probe delays recovery", []time.Duration{300 * ms, 300 * ms, 300 * ms, 0, 0, 300 * ms, 0, 0, 0}, "hhuuuuuuh"},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHealthMonitor(250*ms, 3, t0)
			var got strings.Builder
			for i, lag := range c.lags {
				changed := h.Observe(t0.Add(time.Duration(i)*time.Second), lag)
				if changed && h.Since != t0.Add(time.Duration(i)*time.Second) {
					t.Fatal("Since not moved on a change")
				}
				got.WriteByte(map[string]byte{workerapi.HealthHealthy: 'h', workerapi.HealthUnhealthy: 'u'}[h.State])
			}
			if got.String() != c.states {
				t.Fatalf("states %s, want %s", got.String(), c.states)
			}
		})
	}
}

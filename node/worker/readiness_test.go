package worker

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
)

func readyz(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Under failClosed a worker whose control plane does not answer cannot run a query, so it must
// not look ready; under localLimits it still can.
func TestReadinessFollowsTheControlPlaneUnderFailClosed(t *testing.T) {
	for _, policy := range []string{capacity.OnUnavailableFailClosed, capacity.OnUnavailableLocalLimits} {
		t.Run(policy, func(t *testing.T) {
			f := newFleet(t)
			w := f.worker("w1", nil, nil)
			coord := config.Coordination{Mode: config.CoordinationControlPlane, OnUnavailable: policy,
				LeaseTTLSecs: 20, DriftMarginSecs: 3, OnLeaseLost: "cancel", Queue: config.QueueRetry}
			if _, err := NewCapacityGuard(f.e, w, coord, capacity.NewMetrics(prometheus.NewRegistry())); err != nil {
				t.Fatal(err)
			}
			ops := httptest.NewServer(w.OpsHandler())
			defer ops.Close()
			failClosed := policy == capacity.OnUnavailableFailClosed
			if code, body := readyz(t, ops.URL); failClosed != (code == 503 && strings.Contains(body, "coordination")) {
				t.Fatalf("before the control plane answered: %d %s", code, body)
			}
			w.Start(f.ctx)
			f.eventually("ready once the control plane answers", func() bool { c, _ := readyz(t, ops.URL); return c == 200 })
			f.srv.CloseClientConnections()
			f.srv.Close()
			if !failClosed {
				f.eventually("a few missed heartbeats", func() bool { return w.controlPlaneAnswering() != nil })
				if code, body := readyz(t, ops.URL); code != 200 {
					t.Fatalf("localLimits worker not ready without its control plane: %d %s", code, body)
				}
				return
			}
			f.eventually("not ready without the control plane", func() bool {
				c, body := readyz(t, ops.URL)
				return c == 503 && strings.Contains(body, "no answer from the control plane")
			})
		})
	}
}

package controlplane

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// TestHostileHeartbeatsAreRefusedCountedAndLogged: a hostile worker (or whoever read a
// worker's beats off the wire) replays a heartbeat the control plane already kept, sends an
// older one, beats under a token no session has (another worker's guessed, the worker secret
// itself) or a malformed body. Each is refused (409 naming seq, 401, 400), counted in
// queryflux_controlplane_worker_heartbeats_total{result}, and written in the one rate-limited
// "worker heartbeats refused" lines, one a minute of each reason and session (naming its
// worker; a token of no session names none), and no token, secret or body in them. A replay is no sign of life: a worker whose only beats are replays goes stale. Before: a
// replayed or older beat was answered 200 and kept the worker alive; no refused beat was logged.
func TestHostileHeartbeatsAreRefusedCountedAndLogged(t *testing.T) {
	h := newHarness(t, nil, nil)
	tok := h.register("w1")
	other := h.register("w2")
	if code := h.beat(tok, 5); code != 200 {
		t.Fatalf("first beat: %d", code)
	}
	for _, seq := range []int{5, 4, 1} {
		code, body := h.do("POST", workerapi.PathHeartbeat, tok, workerapi.MediaHeartbeat,
			`{"seq":`+itoa(seq)+`,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"unhealthy"}}`)
		if code != 409 || !strings.Contains(string(body), `"field":"seq"`) || !strings.Contains(string(body), "the last kept 5") {
			t.Errorf("a beat with seq %d after 5: %d %s, want 409 naming seq", seq, code, body)
		}
	}
	if hb := h.state("w1").Heartbeat; hb == nil || hb.Seq != 5 || hb.Health.State != workerapi.HealthHealthy {
		t.Errorf("the kept heartbeat after the replays: %+v, want seq 5, healthy", hb)
	}
	for _, bad := range []string{"qfw_not-a-session-token", secret, other + "x"} {
		if code, _ := h.do("POST", workerapi.PathHeartbeat, bad, workerapi.MediaHeartbeat,
			`{"seq":9,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`); code != 401 {
			t.Errorf("a beat under a token of no session: %d, want 401", code)
		}
	}
	if code, _ := h.do("POST", workerapi.PathHeartbeat, other, workerapi.MediaHeartbeat, `{"seq":1,"sentAt":"noon","password":"hunter2"}`); code != 400 {
		t.Errorf("a malformed beat: %d, want 400", code)
	}
	for result, want := range map[string]float64{"replayed": 3, "unauthorized": 3, "bad_request": 1, "ok": 1} {
		if n := counterValue(t, h.cp.metrics.heartbeats.WithLabelValues(result)); n != want {
			t.Errorf("heartbeats{result=%q} = %v, want %v", result, n, want)
		}
	}

	// Each kind's first refusal at once (w1's replays, the unknown tokens', w2's malformed
	// beat, each naming its worker), a minute later one line counting each kind's others.
	h.cp.Tick(context.Background(), h.e.Advance(61*time.Second))
	var lines []string
	for _, l := range strings.Split(h.e.logs.String(), "\n") {
		if strings.Contains(l, "worker heartbeats refused") {
			lines = append(lines, l)
		}
	}
	want := []string{"refused=1 .* worker=w1 reason=replayed", "refused=1 .* reason=unauthorized", "refused=1 .* worker=w2 reason=bad_request",
		"refused=2 .* worker=w1 reason=replayed", "refused=2 .* reason=unauthorized"}
	if len(lines) != len(want) {
		t.Fatalf("refusal lines: %q, want %d: %q", lines, len(want), want)
	}
	for i, l := range lines {
		if !regexp.MustCompile(want[i]).MatchString(l) || strings.Contains(want[i], "unauthorized") && strings.Contains(l, "worker=") {
			t.Errorf("refusal line %d: %s, want %q", i, l, want[i])
		}
	}
	for _, l := range lines {
		for _, s := range []string{tok, other, secret, "qfw_", "hunter2"} {
			if strings.Contains(l, s) {
				t.Errorf("a refusal line holds %q: %s", s, l)
			}
		}
	}

	// Replays alone do not keep w1 alive; w2's real beats keep it.
	for i := range 5 {
		h.do("POST", workerapi.PathHeartbeat, tok, workerapi.MediaHeartbeat, `{"seq":5,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`)
		if code := h.beat(other, 10+i); code != 200 {
			t.Fatalf("w2's beat: %d", code)
		}
		h.cp.Tick(context.Background(), h.e.Advance(10*time.Second))
	}
	if s := h.state("w1").State; s != workerapi.StateStale {
		t.Errorf("w1 after 50 s of replays only: %s, want stale", s)
	}
	if s := h.state("w2").State; s != workerapi.StateHealthy {
		t.Errorf("w2 beating: %s, want healthy", s)
	}
}

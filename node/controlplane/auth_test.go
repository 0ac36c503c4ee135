package controlplane

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestAuthWorkerRefusesAllButASessionsToken: AuthWorker (what the history intake trusts) names
// the worker of a current session's token, and refuses with ErrUnauthorized, naming nobody, a
// request without a bearer token, with another scheme, with a forged token, the worker secret,
// the admin token, or the token of a session a newer registration superseded; every worker
// endpoint mounted answers those 401 and serves nobody; a registration without the worker
// secret is refused and counted.
func TestAuthWorkerRefusesAllButASessionsToken(t *testing.T) {
	h := newCSHarness(t, time.Second)
	store := capacity.NewMemory()
	MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	h.cp.MountHistory(history.NewMemory(10))
	old := h.token
	_, body := h.get(workerapi.PathRegister, csSecret, nil, "POST", `{"name":"w1","version":"1","labels":{},"frontends":[]}`)
	var reg workerapi.RegisterResponse
	if err := json.Unmarshal([]byte(body), &reg); err != nil || reg.Token == "" || reg.Token == old {
		t.Fatalf("registering w1 again: %s", body)
	}
	current := reg.Token
	for _, c := range []struct{ what, header string }{
		{"no header", ""}, {"another scheme", "Basic " + current}, {"an empty token", "Bearer "},
		{"a forged token", "Bearer qfw_forged"}, {"the worker secret", "Bearer " + csSecret},
		{"the admin token", "Bearer " + csAdminToken}, {"a superseded session's token", "Bearer " + old},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if name, err := h.cp.AuthWorker(r); !errors.Is(err, ErrUnauthorized) || name != "" {
			t.Errorf("%s: %q, %v; want nobody, ErrUnauthorized", c.what, name, err)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	workerapi.SetBearer(r, current)
	if name, err := h.cp.AuthWorker(r); name != "w1" || err != nil {
		t.Fatalf("the current session's token: %q, %v; want w1", name, err)
	}

	h.cp.mu.Lock()
	patterns := append([]string(nil), h.cp.patterns...)
	h.cp.mu.Unlock()
	worker := 0
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		if !strings.HasPrefix(path, "/worker/") || path == workerapi.PathRegister {
			continue
		}
		worker++
		for _, header := range []string{"", "Basic " + current, "Bearer qfw_forged", "Bearer " + csSecret, "Bearer " + old} {
			r := httptest.NewRequest(method, path, strings.NewReader(`{"seq":1}`))
			if header != "" {
				r.Header.Set("Authorization", header)
			}
			rec := httptest.NewRecorder()
			h.cp.Handler().ServeHTTP(rec, r)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s under %q: %d %.200s, want 401", p, header, rec.Code, rec.Body)
			}
		}
	}
	if worker < 8 {
		t.Fatalf("%d worker endpoints mounted: %q", worker, patterns)
	}
	before := counterValue(t, h.cp.metrics.registrations.WithLabelValues("unauthorized"))
	for _, token := range []string{"", current, csAdminToken, csSecret + "x"} {
		if code, body := h.get(workerapi.PathRegister, token, nil, "POST", `{"name":"w2","version":"1"}`); code != http.StatusUnauthorized {
			t.Errorf("a registration under %q: %d %s, want 401", token, code, body)
		}
	}
	if n := counterValue(t, h.cp.metrics.registrations.WithLabelValues("unauthorized")) - before; n != 4 {
		t.Errorf("4 registrations without the worker secret counted %v times", n)
	}
	if _, ok := h.cp.Worker("w2"); ok {
		t.Error("w2 registered without the worker secret")
	}
}

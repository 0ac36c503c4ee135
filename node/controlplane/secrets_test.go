package controlplane

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestNoPageShowsASecret: a control plane whose configuration holds engine passwords (in an
// endpoint URL, in credentials, in options) and users' password hashes, edited, refused and
// checked with more of them, with workers registered, leasing and refused, answers every
// endpoint it mounts (the ones mounted after this test was written too) under the admin
// token, a worker's token and none, with a body that is wrong for it, and serves /metrics:
// no answer, header or log line holds a password, a hash, the worker secret, the admin token
// or a session token. Only a worker's own GET of its configuration carries engine credentials
// (it needs them): it is left out.
func TestNoPageShowsASecret(t *testing.T) {
	logs := &logbuf.Buffer{}
	e := env.Real(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	reg := prometheus.NewRegistry()
	h, _ := storedConfig(t, newCSHarnessWith(t, time.Second, registry.NewMemory(), e, Config{Metrics: reg}))
	store := capacity.NewMemory()
	MountCapacity(e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1", Metrics: capacity.NewMetrics(reg)})
	h.cp.MountHistory(history.NewMemory(100))
	h.cp.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})) // as the daemon mounts it

	secrets := []string{"url-secret-pw", "cred-secret-pw", "option-secret-pw", guardBcrypt, guardNative,
		"new-secret-pw", "rejected-secret-pw", "broken-secret-pw", csSecret, csAdminToken, h.token, "qfw_"}
	if code, _, _, body := h.put(PathAdminConfig, guardYAML, nil); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	edited := strings.NewReplacer("maxRunningQueries: 3", "maxRunningQueries: 7", "cred-secret-pw", "new-secret-pw").Replace(guardYAML)
	if code, _, _, body := h.put(PathAdminConfig, edited, nil); code != 200 {
		t.Fatalf("PUT of an edit: %d %s", code, body)
	}
	refused := strings.NewReplacer("maxRunningQueries: 3", "maxRunningQueries: -3", "cred-secret-pw", "rejected-secret-pw").Replace(guardYAML)
	if code, _, _, body := h.put(PathAdminConfig, refused, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("PUT of an invalid edit: %d %s", code, body)
	}
	broken := "clusters:\n  - {name: pg, engine: postgres, endpoint: \"postgres://app:broken-secret-pw@db:5432/app\",\n    credentials: {password: broken-secret-pw, pasword: broken-secret-pw}\n"
	for _, doc := range []string{broken, strings.Replace(guardYAML, "sslpassword:", "sslpasword:", 1) + "\n  x: [broken-secret-pw"} {
		if code, body := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", doc); code < 400 {
			t.Fatalf("a check of a broken document: %d %s", code, body)
		}
	}
	// A worker at work and refused: a lease, another's lease renewed, requests under a forged
	// token and under the worker secret.
	code, body := h.get(capacity.PathAcquire, h.token, http.Header{"Content-Type": {capacity.MediaJSON}}, "POST", `{"cluster":"pg","cap":3,"ttlMillis":30000}`)
	if code != 200 || !strings.Contains(body, `"granted":true`) {
		t.Fatalf("acquire: %d %s", code, body)
	}
	for _, token := range []string{"qfw_forged", csSecret, csAdminToken} {
		h.get(capacity.PathAcquire, token, http.Header{"Content-Type": {capacity.MediaJSON}}, "POST", `{"cluster":"pg"}`)
		h.get(workerapi.PathHeartbeat, token, http.Header{"Content-Type": {workerapi.MediaHeartbeat}}, "POST", `{"seq":1}`)
	}

	var seen strings.Builder
	pages := map[string]int{} // GET pages answered 200 under the admin token
	h.cp.mu.Lock()
	patterns := append([]string(nil), h.cp.patterns...)
	h.cp.mu.Unlock()
	for _, p := range patterns {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			method, path = "GET", p
		}
		path = strings.ReplaceAll(path, "{name}", "w1")
		for _, token := range []string{csAdminToken, h.token, ""} {
			if token == h.token && method == "GET" && strings.HasPrefix(path, snapshot.PathConfig) {
				continue // the worker's own configuration, credentials and all
			}
			body := ""
			if method != "GET" {
				body = `{"name":"w1","x":["` // no endpoint's request: each answers what was wrong
			}
			code, hdr, b := h.do(path, token, http.Header{"Content-Type": {"application/json"}}, method, body)
			if method == "GET" && token == csAdminToken && code == 200 {
				pages[path]++
			}
			seen.WriteString(p + " " + b + "\n")
			for k, v := range hdr {
				seen.WriteString(k + ": " + strings.Join(v, ",") + "\n")
			}
		}
	}
	for _, want := range []string{PathAdminConfig, PathAdminConfigHistory, PathAdminConfigRejections, workerapi.PathAdminWorkers,
		workerapi.PathAdminWorkers + "/w1", PathAdminLeases, PathAdminCapacityStats, history.PathAdminQueries, "/metrics"} {
		if pages[want] == 0 {
			t.Errorf("GET %s under the admin token did not answer 200: the scan missed it (answered: %v)", want, pages)
		}
	}
	if out := seen.String(); !strings.Contains(out, "queryflux_") || !strings.Contains(out, "db.internal") {
		t.Fatalf("the pages hold no metrics or no configuration: the scan would find nothing:\n%.2000s", out)
	}
	for _, s := range secrets {
		if i := strings.Index(seen.String(), s); i >= 0 {
			t.Errorf("an answer holds the secret %q: ...%s...", s, around(seen.String(), i))
		}
		if i := strings.Index(logs.String(), s); i >= 0 {
			t.Errorf("the log holds the secret %q: ...%s...", s, around(logs.String(), i))
		}
	}
}

// around is the text within 200 bytes of s[i].
func around(s string, i int) string {
	return s[max(0, i-200):min(len(s), i+200)]
}

// TestAdminEndpointsAnswerOnlyTheAdminToken: every admin endpoint mounted, asked under a
// worker's token, the worker secret, a wrong token or none, answers 401 with one error object
// and does nothing: no page after it, and a revocation of a held lease leaves it held. A control
// plane configured without an admin token answers every one so, the empty token included.
func TestAdminEndpointsAnswerOnlyTheAdminToken(t *testing.T) {
	for _, configured := range []bool{true, false} {
		t.Run(fmt.Sprintf("adminToken=%v", configured), func(t *testing.T) { checkAdminClosed(t, configured) })
	}
}

func checkAdminClosed(t *testing.T, configured bool) {
	h := newCSHarness(t, time.Second)
	tokens, says := []string{h.token, csSecret, csAdminToken + "x", ""}, "admin token"
	if !configured {
		h.cp.cfg.AdminToken = ""
		tokens, says = append(tokens, csAdminToken), "admin API disabled"
	}
	store := capacity.NewMemory()
	MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	h.cp.MountHistory(history.NewMemory(100))
	h.srv.MountAdmin(h.cp, nil)
	code, body := h.get(capacity.PathAcquire, h.token, http.Header{"Content-Type": {capacity.MediaJSON}}, "POST", `{"cluster":"pg","cap":3,"ttlMillis":30000}`)
	var acq capacity.AcquireResponse
	if err := json.Unmarshal([]byte(body), &acq); code != 200 || err != nil || !acq.Granted {
		t.Fatalf("acquire: %d %s", code, body)
	}
	revoke := fmt.Sprintf(`{"lease":%q}`, acq.Lease.ID)
	h.cp.mu.Lock()
	patterns := append([]string(nil), h.cp.patterns...)
	h.cp.mu.Unlock()
	admin := 0
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		if !strings.HasPrefix(path, "/admin/") {
			continue
		}
		admin++
		path = strings.ReplaceAll(path, "{name}", "w1")
		for _, token := range tokens {
			code, _, b := h.do(path, token, http.Header{"Content-Type": {"application/json"}}, method, revoke)
			dec := json.NewDecoder(strings.NewReader(b))
			var answer workerapi.ErrorBody
			if err := dec.Decode(&answer); code != http.StatusUnauthorized || err != nil || !strings.Contains(answer.Error, says) || dec.More() {
				t.Errorf("%s under %q: %d %.300s; want 401 and one error object", p, token, code, b)
			}
		}
	}
	if admin < 8 {
		t.Fatalf("%d admin endpoints mounted: %q", admin, patterns)
	}
	if ls, _ := store.List(t.Context(), "pg"); len(ls) != 1 || ls[0].Revoked {
		t.Fatalf("after revocations without the admin token: %+v, want the lease held", ls)
	}
}

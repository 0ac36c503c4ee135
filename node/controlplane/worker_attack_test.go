package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// hostileFleet is a control plane serving givenSnapshot, every cluster capped at 1, with the
// capacity API mounted as the daemon mounts it (Served from the snapshot filtered per labels).
func hostileFleet(t *testing.T) (*csHarness, *capacity.Memory, *capacity.Metrics) {
	h := newCSHarness(t, time.Minute)
	if err := h.srv.Publish(givenSnapshot(t, "c-eu", "")); err != nil {
		t.Fatal(err)
	}
	store, metrics := capacity.NewMemory(), capacity.NewMetrics(nil)
	MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1", Metrics: metrics,
		Limits: func(cluster string) (int, time.Duration, bool) {
			return 1, 30 * time.Second, cluster == "c-eu" || cluster == "c-us" || cluster == "c-all"
		},
		Served: func(worker, cluster string) bool {
			labels, _ := h.cp.Labels(worker)
			return h.srv.Serves(labels, cluster)
		}})
	return h, store, metrics
}

// send POSTs body as media to path with token: the status and the answer.
func (h *csHarness) send(path, token, media, body string) (int, string) {
	h.t.Helper()
	return h.get(path, token, http.Header{"Content-Type": {media}}, "POST", body)
}

// TestHostileWorkerAgainstTheControlPlane: a worker of zone eu, holding the worker secret, sends
// what it should not everywhere it talks to the control plane: leases of the us cluster, leases
// asked as another worker, negative terms, renewals and releases of another worker's lease,
// heartbeats naming another worker or carrying lease ids or negative counts, a config request
// for another worker's snapshot, a second name, and the us worker's own name. Each is refused
// with an answer that names what was wrong (or, for a worker's clock, flagged), and no cluster
// ever has more than its cap of 1 lease held fleet-wide.
func TestHostileWorkerAgainstTheControlPlane(t *testing.T) {
	h, store, metrics := hostileFleet(t)
	us := h.register("w-us", "us-1")
	code, body := h.send(capacity.PathAcquire, us, capacity.MediaJSON, `{"cluster":"c-all","cap":1,"ttlMillis":30000}`)
	var held capacity.AcquireResponse
	if code != 200 || json.Unmarshal([]byte(body), &held) != nil || !held.Granted {
		t.Fatalf("the us worker's acquire: %d %s", code, body)
	}
	victim := fmt.Sprintf(`{"id":%q,"generation":%d}`, held.Lease.ID, held.Lease.Generation)
	eu := h.register("w-eu", "eu-1")

	refused := []struct {
		what, path, media, body string
		code                    int
		says                    string
	}{
		{"a lease of a cluster it is not given", capacity.PathAcquire, capacity.MediaJSON,
			`{"cluster":"c-us","cap":1,"ttlMillis":30000}`, 403, `not in this worker's configuration \"c-us\"`},
		{"a lease of a cluster no configuration has", capacity.PathAcquire, capacity.MediaJSON,
			`{"cluster":"c-ghost","cap":1,"ttlMillis":30000}`, 400, `unknown cluster \"c-ghost\"`},
		{"a negative cap", capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"c-eu","cap":-1,"ttlMillis":30000}`, 400, "cap -1"},
		{"a negative TTL", capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"c-eu","cap":1,"ttlMillis":-5}`, 400, "ttlMillis -5"},
		{"a negative wait", capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"c-eu","cap":1,"ttlMillis":1,"waitMillis":-1}`, 400, "waitMillis -1"},
		{"a cap past int64", capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"c-eu","cap":99999999999999999999}`, 400, "cap"},
		{"a renewal with a negative TTL", capacity.PathRenew, capacity.MediaJSON, `{"lease":` + victim + `,"ttlMillis":-1}`, 400, "ttlMillis -1"},
		{"a renewal of the us worker's lease", capacity.PathRenew, capacity.MediaJSON, `{"lease":` + victim + `,"ttlMillis":30000}`, 403, ""},
		{"a release of the us worker's lease", capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + victim + `]}`, 403, ""},
		{"a release of it riding on an acquire", capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"c-eu","release":[` + victim + `]}`, 403, ""},
		{"a malformed lease id", capacity.PathRenew, capacity.MediaJSON, `{"lease":{"id":"c-all#1","generation":-1}}`, 400, "generation -1"},
		{"a heartbeat naming another worker", workerapi.PathHeartbeat, workerapi.MediaHeartbeat,
			`{"seq":1,"sentAt":"2026-01-01T00:00:00Z","name":"w-us","health":{"state":"healthy"}}`, 400, `"field":"name"`},
		{"a heartbeat carrying lease ids", workerapi.PathHeartbeat, workerapi.MediaHeartbeat,
			`{"seq":1,"sentAt":"2026-01-01T00:00:00Z","leases":[` + victim + `],"health":{"state":"healthy"}}`, 400, `"field":"leases"`},
		{"a heartbeat with a negative count", workerapi.PathHeartbeat, workerapi.MediaHeartbeat,
			`{"seq":1,"sentAt":"2026-01-01T00:00:00Z","history":{"sent":-1},"health":{"state":"healthy"}}`, 400, `"field":"history.sent"`},
		{"a heartbeat with a negative loop lag", workerapi.PathHeartbeat, workerapi.MediaHeartbeat,
			`{"seq":1,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy","loopLagSeconds":-1}}`, 400, `"field":"health.loopLagSeconds"`},
		{"a heartbeat with no sequence", workerapi.PathHeartbeat, workerapi.MediaHeartbeat,
			`{"seq":0,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`, 400, `"field":"seq"`},
	}
	for _, r := range refused {
		code, body := h.send(r.path, eu, r.media, r.body)
		if code != r.code || !strings.Contains(body, r.says) {
			t.Errorf("%s: %d %s; want %d saying %s", r.what, code, strings.TrimSpace(body), r.code, r.says)
		}
	}
	if n := counterValue(t, metrics.Refused.WithLabelValues("acquire", "not-served")); n != 1 {
		t.Errorf("acquires of a cluster not given counted: %v, want 1", n)
	}
	if n := counterValue(t, metrics.Refused.WithLabelValues("acquire", "unknown-cluster")); n != 1 {
		t.Errorf("acquires of an unknown cluster counted: %v, want 1", n)
	}

	// Asking as the us worker, or for more than the cap, leaves the us worker's lease the only one.
	for _, body := range []string{`{"cluster":"c-all","cap":1000,"ttlMillis":86400000}`, `{"cluster":"c-all","cap":1,"holder":"w-us"}`} {
		if code, answer := h.send(capacity.PathAcquire, eu, capacity.MediaJSON, body); code != 200 || strings.Contains(answer, `"granted":true`) {
			t.Errorf("acquire %s past the cap: %d %s", body, code, answer)
		}
	}
	// A far-off clock is flagged, not refused: a worker whose clock stepped keeps its place.
	if code, body := h.send(workerapi.PathHeartbeat, eu, workerapi.MediaHeartbeat,
		`{"seq":1,"sentAt":"9999-12-31T23:59:59Z","health":{"state":"healthy"}}`); code != 200 {
		t.Errorf("a heartbeat dated 9999: %d %s", code, body)
	}
	if code, body := h.get(workerapi.PathAdminWorkers, csAdminToken, nil, "", ""); code != 200 || !strings.Contains(body, "clock skew") {
		t.Errorf("admin workers after a heartbeat dated 9999: %d %s; want a clock skew warning", code, body)
	}
	// Another worker's snapshot is not to be had by asking for it: the answer is the caller's own.
	code, body = h.get(snapshot.PathConfig+"?worker=w-us&labels=zone%3Dus-1", eu, http.Header{"X-Queryflux-Worker": {"w-us"}}, "", "")
	snap, err := snapshot.Decode([]byte(body))
	if code != 200 || err != nil {
		t.Fatalf("the eu worker's config: %d %v", code, err)
	}
	for _, c := range snap.Clusters {
		if c.Name == "c-us" {
			t.Errorf("the eu worker asking for w-us's config got cluster c-us")
		}
	}

	// A second name, then the us worker's own: the us worker's session ends, its lease is revoked
	// but keeps its slot until fenced or expired, so neither new session gets one.
	for _, name := range []string{"w-eu2", "w-us"} {
		tok := h.register(name, "us-1")
		if code, answer := h.send(capacity.PathAcquire, tok, capacity.MediaJSON, `{"cluster":"c-all","cap":1,"ttlMillis":30000}`); code != 200 || strings.Contains(answer, `"granted":true`) {
			t.Errorf("%s's acquire while the us worker's lease holds the slot: %d %s", name, code, answer)
		}
	}
	if code, _ := h.send(capacity.PathRenew, us, capacity.MediaJSON, `{"lease":`+victim+`,"ttlMillis":30000}`); code != 401 {
		t.Errorf("the superseded us session renewing: %d, want 401", code)
	}
	for _, cluster := range []string{"c-eu", "c-us", "c-all"} {
		if ls, _ := store.List(context.Background(), cluster); len(ls) > 1 {
			t.Errorf("cluster %s (cap 1) holds %d leases: %+v", cluster, len(ls), ls)
		}
	}
}

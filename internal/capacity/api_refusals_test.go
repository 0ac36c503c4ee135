package capacity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestRenewAndReleaseRefusalsAnswerOnceAndChangeNothing: a worker's renewal or release that
// is malformed, negative, oversized or names another worker's lease is answered with one error
// naming what was wrong, counted once as a refusal of its kind, and changes no lease: the
// holder's lease keeps its expiry and stays held. A handler that went on after refusing would
// write a second answer into the same response and count the refusal again.
func TestRenewAndReleaseRefusalsAnswerOnceAndChangeNothing(t *testing.T) {
	store := capacity.NewMemory()
	reg := prometheus.NewRegistry()
	metrics := capacity.NewMetrics(reg)
	api := quietAPI(store, metrics).
		Authority(func(cluster string) (int, time.Duration, bool) {
			return 1, time.Minute, cluster == "c" || cluster == "old" || cluster == "secret"
		}).
		Served(func(holder, cluster string) bool { return cluster != "secret" })
	held, err := store.Acquire(t.Context(), "c", "w1", 1, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	old, err := store.Acquire(t.Context(), "old", "w1", 1, time.Minute, time.Now())
	if err == nil {
		err = store.Release(t.Context(), old.Ref().As("w1"))
	}
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf(`{"id":%q,"generation":%d}`, held.ID, held.Generation)
	refs := func(n int) string { // held's ref and n-1 refs of leases never granted
		parts := []string{ref}
		for i := 1; i < n; i++ {
			parts = append(parts, fmt.Sprintf(`{"id":"c#%d","generation":%d}`, held.Generation+int64(i), held.Generation+int64(i)))
		}
		return strings.Join(parts, ",")
	}
	for _, c := range []struct {
		name, path, caller, body string
		status                   int
		names, op, reason        string
	}{
		{"an acquire of a cluster it is not given", capacity.PathAcquire, "w1", `{"cluster":"secret"}`, 403, `"secret"`, "acquire", "not-served"},
		{"an acquire of a cluster not configured", capacity.PathAcquire, "w1", `{"cluster":"nope"}`, 400, "no such cluster", "acquire", "unknown-cluster"},
		{"a renewal of a lease it released", capacity.PathRenew, "w1", fmt.Sprintf(`{"lease":{"id":%q,"generation":%d},"ttlMillis":60000}`, old.ID, old.Generation), 409, "stale", "renew", "stale"},
		{"a renewal for a negative term", capacity.PathRenew, "w1", `{"lease":` + ref + `,"ttlMillis":-5}`, 400, "ttlMillis -5", "renew", "invalid"},
		{"a renewal that is not JSON", capacity.PathRenew, "w1", `{"lease":` + ref, 400, "", "renew", "bad-request"},
		{"a renewal with an unknown field", capacity.PathRenew, "w1", `{"lease":` + ref + `,"ttl":5}`, 400, "ttl", "renew", "bad-request"},
		{"a renewal of another worker's lease", capacity.PathRenew, "w2", `{"lease":` + ref + `,"ttlMillis":60000}`, 403, "another worker", "renew", "not-holder"},
		{"a batch renewal for a negative term", capacity.PathRenewBatch, "w1", `{"leases":[` + ref + `],"ttlMillis":-5}`, 400, "ttlMillis -5", "renew", "invalid"},
		{"a batch renewal that is not JSON", capacity.PathRenewBatch, "w1", `{"leases":[` + ref, 400, "", "renew", "bad-request"},
		{"a batch renewal over the batch's bound", capacity.PathRenewBatch, "w1",
			fmt.Sprintf(`{"leases":[%s],"ttlMillis":60000}`, refs(capacity.RenewBatchMax+1)), 400,
			fmt.Sprintf("%d leases in one renewal batch", capacity.RenewBatchMax+1), "renew", "invalid"},
		{"a release that is not JSON", capacity.PathReleaseBatch, "w1", `{"leases":[` + ref, 400, "", "release", "bad-request"},
		{"a release of a malformed ref", capacity.PathReleaseBatch, "w1", `{"leases":[{"id":"c#1","generation":2}]}`, 400, `"c#1"`, "release", "invalid"},
		{"a release of another worker's lease", capacity.PathReleaseBatch, "w2", `{"leases":[` + ref + `]}`, 403, "another worker", "release", "not-holder"},
	} {
		before := testutil.ToFloat64(metrics.Refused.WithLabelValues(c.op, c.reason))
		total := refusedTotal(t, reg)
		rec := serveAs(api, c.path, c.caller, c.body)
		body := rec.Body.Bytes()
		var e workerapi.ErrorBody
		dec := json.NewDecoder(bytes.NewReader(body))
		if rec.Code != c.status || dec.Decode(&e) != nil || !strings.Contains(e.Error, c.names) {
			t.Errorf("%s: %d %s, want %d naming %s", c.name, rec.Code, bytes.TrimSpace(body), c.status, c.names)
		} else if dec.More() {
			t.Errorf("%s: answered more than one error: %s", c.name, bytes.TrimSpace(body))
		}
		if got := testutil.ToFloat64(metrics.Refused.WithLabelValues(c.op, c.reason)) - before; got != 1 {
			t.Errorf("%s: refused{op=%s,reason=%s} counted %v times, want once", c.name, c.op, c.reason, got)
		}
		if n := refusedTotal(t, reg) - total; n != 1 {
			t.Errorf("%s: %v refusals counted in all, want one", c.name, n)
		}
		ls, err := store.List(t.Context(), "c")
		if err != nil || len(ls) != 1 || ls[0].ID != held.ID || ls[0].ExpiresAt != held.ExpiresAt || ls[0].Revoked {
			t.Fatalf("%s: leases after the refusal %+v %v, want only %s as granted (expires %v)", c.name, ls, err, held.ID, held.ExpiresAt)
		}
	}
}

// TestRenewBatchOfTheBoundIsServed: a batch of exactly RenewBatchMax leases is answered lease by
// lease, the holder's renewed and the others refused each in its result.
func TestRenewBatchOfTheBoundIsServed(t *testing.T) {
	store := capacity.NewMemory()
	api := quietAPI(store, nil)
	held, err := store.Acquire(t.Context(), "c", "w1", 1, time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leases := []capacity.LeaseRef{{ID: held.ID, Generation: held.Generation}}
	for i := 1; len(leases) < capacity.RenewBatchMax; i++ {
		g := held.Generation + int64(i)
		leases = append(leases, capacity.LeaseRef{ID: fmt.Sprintf("c#%d", g), Generation: g})
	}
	body, _ := json.Marshal(capacity.RenewBatchRequest{Leases: leases, TTLMillis: 60000})
	rec := serveAs(api, capacity.PathRenewBatch, "w1", string(body))
	var resp capacity.RenewBatchResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &resp) != nil || len(resp.Results) != len(leases) {
		t.Fatalf("a batch of %d leases: %d %.300s, want 200 with a result for each", len(leases), rec.Code, rec.Body.String())
	}
	if r := resp.Results[0]; r.Lease == nil || r.Lease.ExpiresAt == held.ExpiresAt {
		t.Errorf("the held lease's result %+v: not renewed", r)
	}
	for _, r := range resp.Results[1:] {
		if r.Lease != nil || r.Status != http.StatusForbidden {
			t.Fatalf("a lease never granted: %+v, want refused 403", r)
		}
	}
}

// refusedTotal sums queryflux_capacity_refused_total over its labels.
func refusedTotal(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "queryflux_capacity_refused_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestOrderedAcquireCarryingItsReleaseIsGranted: in ordered mode the leases an acquire carries
// are freed before it is decided, so a worker at its cluster's cap that gives one back on the
// same call is granted in its place, and told so.
func TestOrderedAcquireCarryingItsReleaseIsGranted(t *testing.T) {
	store := capacity.NewMemory()
	api := quietAPI(store, nil).Ordered()
	held, err := store.Acquire(t.Context(), "c", "w1", 1, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"cluster":"c","cap":1,"ttlMillis":60000,"release":[{"id":%q,"generation":%d}]}`, held.ID, held.Generation)
	rec := serveAs(api, capacity.PathAcquire, "w1", body)
	var resp capacity.AcquireResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &resp) != nil || !resp.Granted || resp.Lease == nil || resp.Lease.ID == held.ID {
		t.Fatalf("an acquire carrying the release of the cluster's one lease: %d %s, want a new lease granted", rec.Code, rec.Body.String())
	}
	if mt := rec.Header().Get("Content-Type"); mt != capacity.MediaJSON {
		t.Fatalf("the acquire's answer is of media type %q, want %s", mt, capacity.MediaJSON)
	}
}

// TestRenewalTermsComeFromTheAuthority: a renewal asking for more than the configuration's
// term for its cluster is renewed for the configured term, and one of a cluster the
// configuration no longer has is refused: a worker cannot hold a slot for an hour by asking.
func TestRenewalTermsComeFromTheAuthority(t *testing.T) {
	store := capacity.NewMemory()
	api := quietAPI(store, nil).
		Authority(func(cluster string) (int, time.Duration, bool) { return 1, 10 * time.Second, cluster == "c" })
	held, err := store.Acquire(t.Context(), "c", "w1", 1, 5*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gone, err := store.Acquire(t.Context(), "gone", "w1", 1, 5*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{capacity.PathRenew, capacity.PathRenewBatch} {
		for _, l := range []capacity.Lease{held, gone} {
			body := fmt.Sprintf(`{"lease":{"id":%q,"generation":%d},"ttlMillis":3600000}`, l.ID, l.Generation)
			if path == capacity.PathRenewBatch {
				body = fmt.Sprintf(`{"leases":[{"id":%q,"generation":%d}],"ttlMillis":3600000}`, l.ID, l.Generation)
			}
			rec := serveAs(api, path, "w1", body)
			got := rec.Body.String()
			switch {
			case l.ID == held.ID && (rec.Code != http.StatusOK || !strings.Contains(got, `"ttlMillis":10000`)):
				t.Errorf("%s of %s for an hour: %d %s, want renewed for the configured 10 s", path, l.ID, rec.Code, got)
			case l.ID == gone.ID && (strings.Contains(got, `"lease":{`) || !strings.Contains(got, "no such cluster")):
				t.Errorf("%s of %s, a cluster no longer configured: %d %s, want refused", path, l.ID, rec.Code, got)
			}
		}
	}
}

// quietAPI is the capacity API on store, its log discarded; metrics may be nil.
func quietAPI(store *capacity.Memory, metrics *capacity.Metrics) *capacity.API {
	return capacity.NewAPI(store, store, env.Real(slog.New(slog.DiscardHandler)), metrics)
}

// serveAPIAs serves api's endpoints as the control plane mounts them, every request from the
// authenticated caller ("": the holder an acquire's body names).
func serveAPIAs(api *capacity.API, caller string) http.Handler {
	mux := http.NewServeMux()
	for _, ep := range api.Endpoints() {
		mux.HandleFunc("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request) { ep.Serve(w, r, caller) })
	}
	return mux
}

// serveAs posts body to api's endpoint path as the authenticated caller.
func serveAs(api *capacity.API, path, caller, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", capacity.MediaJSON)
	rec := httptest.NewRecorder()
	serveAPIAs(api, caller).ServeHTTP(rec, req)
	return rec
}

// downStore is a store whose renewals and releases fail as an unreachable database does, its
// error naming the database's address with a password in it.
type downStore struct{ *capacity.Memory }

var errDown = errors.New("capacity store: dial postgres://qf:s3cretpw@db.internal:5432/qf: connection refused")

func (downStore) Renew(context.Context, capacity.LeaseRef, time.Duration, time.Time) (capacity.Lease, error) {
	return capacity.Lease{}, errDown
}

func (downStore) ReleaseBatch(context.Context, []capacity.LeaseRef) (int, error) { return 0, errDown }

// TestStoreFailuresStayInTheLog: when the store fails, the worker is answered 503 "capacity
// store unavailable" and nothing of the store's error (which may name the database with its
// password); the failure is counted and logged for the operator, the password hidden.
func TestStoreFailuresStayInTheLog(t *testing.T) {
	var logs bytes.Buffer
	metrics := capacity.NewMetrics(prometheus.NewRegistry())
	store := downStore{capacity.NewMemory()}
	api := capacity.NewAPI(store, store, env.Real(slog.New(slog.NewTextHandler(&logs, nil))), metrics)
	for _, c := range []struct{ path, op, body string }{
		{capacity.PathRenew, "renew", `{"lease":{"id":"c#1","generation":1},"ttlMillis":60000}`},
		{capacity.PathReleaseBatch, "release", `{"leases":[{"id":"c#1","generation":1}]}`},
	} {
		logs.Reset()
		rec := serveAs(api, c.path, "w1", c.body)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "capacity store unavailable") || strings.Contains(rec.Body.String(), "s3cretpw") {
			t.Errorf("%s with the store down: %d %s, want 503 saying only that the store is unavailable", c.path, rec.Code, rec.Body.String())
		}
		if n := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("store-" + c.op)); n != 1 {
			t.Errorf("%s with the store down: counted %v times, want once", c.path, n)
		}
		if !strings.Contains(logs.String(), "capacity store failed") || !strings.Contains(logs.String(), "connection refused") ||
			!strings.Contains(logs.String(), "db.internal") {
			t.Errorf("%s with the store down: the failure not logged: %q", c.path, logs.String())
		}
		if strings.Contains(logs.String(), "s3cretpw") {
			t.Errorf("%s with the store down: the log holds the store's password: %q", c.path, logs.String())
		}
	}
}

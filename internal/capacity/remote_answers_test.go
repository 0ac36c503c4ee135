package capacity_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
)

// TestRemoteAuthorizesEveryLeaseRequest: a worker's lease client over HTTP adds its credentials
// to every request of the lease protocol (acquire, renew, renew-batch, release, settle, watch):
// one sent without them is refused by an authenticating control plane, and the worker's queries
// with it.
func TestRemoteAuthorizesEveryLeaseRequest(t *testing.T) {
	store := capacity.NewMemory()
	api := capacity.NewAPIHandler(store, store, env.Real(slog.New(slog.DiscardHandler)), nil)
	unauthorized := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer worker-token" {
			unauthorized[r.URL.Path]++
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	r := capacity.NewRemote(srv.URL, srv.Client(), func(req *http.Request) { req.Header.Set("Authorization", "Bearer worker-token") })
	ctx := context.Background()
	l, _, err := r.AcquireContendedNamed(ctx, "c", "w1", 2, time.Minute, time.Time{}, nil, capacity.Naming{Request: "a1"})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	_, errRenew := r.Renew(ctx, l.Ref(), time.Minute, time.Time{})
	_, _, errBatch := r.RenewBatchContended(ctx, []capacity.LeaseRef{l.Ref()}, time.Minute, time.Time{})
	_, errWatch := r.WatchContention(ctx, "w1", []string{"c"}, time.Millisecond)
	errSettle := r.Settle(ctx, "c", "w1", "a1")
	_, errRelease := r.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()})
	if err := errors.Join(errRenew, errBatch, errWatch, errSettle, errRelease); err != nil || len(unauthorized) > 0 {
		t.Errorf("requests refused as unauthorized: %v; errors: %v", unauthorized, err)
	}
}

// TestRemoteRefusesAGrantWithoutItsLease: a control plane's acquire answer that says granted but
// carries no lease, or a lease of another cluster, is answered as an error naming what was wrong
// (coordination unavailable), never as a lease, and does not crash the worker.
func TestRemoteRefusesAGrantWithoutItsLease(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer capacity.AcquireResponse
	}{
		{"no lease", capacity.AcquireResponse{Granted: true}},
		{"another cluster's", capacity.AcquireResponse{Granted: true, Lease: &capacity.Lease{ID: "d#1", Cluster: "d", Holder: "w1", Generation: 1}}},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(c.answer)
		}))
		r := capacity.NewRemote(srv.URL, srv.Client(), nil)
		var l capacity.Lease
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = errors.New("panicked")
				}
			}()
			l, err = r.Acquire(context.Background(), "c", "w1", 2, time.Minute, time.Time{})
		}()
		srv.Close()
		if !errors.Is(err, capacity.ErrUnavailable) || !strings.Contains(err.Error(), `"c"`) || l.ID != "" {
			t.Errorf("%s: answered %+v, %v; want no lease and coordination unavailable naming the cluster", c.name, l, err)
		}
	}
}

// TestRemoteRenewBatchAnswers: a renew-batch that fails (500) is an error, and the next one is
// still sent as a batch (only a control plane without the path, 404, is renewed one lease at a
// time from then on); an answer with fewer results than leases is an error naming it, not a
// renewal of some of them, nor a crash of the worker's keeper.
func TestRemoteRenewBatchAnswers(t *testing.T) {
	store := capacity.NewMemory()
	api := capacity.NewAPIHandler(store, store, env.Real(slog.New(slog.DiscardHandler)), nil)
	asked, mode := map[string]int{}, "fail"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked[r.URL.Path]++
		if r.URL.Path == capacity.PathRenewBatch {
			switch mode {
			case "fail":
				http.Error(w, "the store's connection was reset", http.StatusInternalServerError)
				return
			case "short":
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"results":[]}`))
				return
			}
		}
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	r := capacity.NewRemote(srv.URL, srv.Client(), nil)
	ctx := context.Background()
	l, err := r.Acquire(ctx, "c", "w1", 2, time.Minute, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	refs := []capacity.LeaseRef{l.Ref()}
	if _, _, err := r.RenewBatchContended(ctx, refs, time.Minute, time.Time{}); err == nil {
		t.Errorf("a renew-batch answered 500: no error")
	}
	mode = "short"
	got, _, err := r.RenewBatchContended(ctx, refs, time.Minute, time.Time{})
	if !errors.Is(err, capacity.ErrUnavailable) || !strings.Contains(err.Error(), "0 answers for 1 leases") || len(got) != 0 {
		t.Errorf("a renew-batch answered with no results: %v, %v; want an error naming the count", got, err)
	}
	mode = "ok"
	got, _, err = r.RenewBatchContended(ctx, refs, time.Minute, time.Time{})
	if err != nil || len(got) != 1 || got[0].Err != nil {
		t.Errorf("renewal: %+v, %v", got, err)
	}
	if asked[capacity.PathRenewBatch] != 3 || asked[capacity.PathRenew] != 0 {
		t.Errorf("asked %v: want 3 renew-batches, no single renewals", asked)
	}
}

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestWorkerCannotDateHistoryOutsideTime: a worker with a valid session reports records dated
// where no query ran: far in the future (it would stay on top of every newest-first listing of
// /admin/queries and outlive every retention prune) or before 1970. Each batch is refused with
// 400 naming the record's field, and nothing of it is stored; a record within an hour of the
// control plane's clock (worker clocks drift) is taken.
func TestWorkerCannotDateHistoryOutsideTime(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := history.NewMemory(100)
	h.cp.MountHistory(store)
	tok := h.register("w1")
	now := h.e.Now()
	batch := func(id string, start, end time.Time) string {
		return fmt.Sprintf(`{"batchId":%q,"records":[{"queryId":"ok-%s","status":"succeeded","startedAt":%q,"endedAt":%q},`+
			`{"queryId":%q,"status":"succeeded","startedAt":%q,"endedAt":%q}]}`, id, id,
			now.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), id, start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	year9999 := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	year1 := time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)
	for _, c := range []struct {
		name       string
		start, end time.Time
		field      string
	}{
		{"started in year 9999", year9999, year9999, "records[1].startedAt"},
		{"ends in year 9999", now, year9999, "records[1].endedAt"},
		{"started a day ahead", now.Add(24 * time.Hour), now.Add(24 * time.Hour), "records[1].startedAt"},
		{"started in year 1", year1, now, "records[1].startedAt"},
		{"started in 1969", time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), now, "records[1].startedAt"},
	} {
		code, body := h.do("POST", history.PathWorkerHistory, tok, history.MediaQueryRecords, batch(c.name, c.start, c.end))
		var eb workerapi.ErrorBody
		_ = json.Unmarshal(body, &eb)
		if code != 400 || eb.Field != c.field {
			t.Errorf("%s: %d field %q (%s), want 400 naming %s", c.name, code, eb.Field, eb.Error, c.field)
		}
	}
	page, err := store.Query(context.Background(), history.Filter{})
	if err != nil || len(page.Records) != 0 {
		t.Fatalf("refused batches stored %d records (%v): %+v", len(page.Records), err, page.Records)
	}
	// Within the allowed skew, and an old (but real) date: stored.
	code, body := h.do("POST", history.PathWorkerHistory, tok, history.MediaQueryRecords,
		batch("skewed", now.Add(50*time.Minute), now.Add(59*time.Minute)))
	if code != 200 {
		t.Fatalf("a record 59 minutes ahead: %d %s", code, body)
	}
	code, body = h.do("POST", history.PathWorkerHistory, tok, history.MediaQueryRecords,
		batch("old", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), now))
	if code != 200 {
		t.Fatalf("a record from 1970: %d %s", code, body)
	}
}

// TestWorkerHoldsAtMostFourWatches: one worker opens six contention watches at once (each is
// held up to ten seconds). Four are held; the other two are answered 429 at once, so one worker
// cannot fill the API listener's connections with watches (fleettest's
// TestOneWorkerCannotHoldTheControlPlanesConnections does it with config long-polls on a real
// daemon).
func TestWorkerHoldsAtMostFourWatches(t *testing.T) {
	cp := New(env.Real(nil), testConfig, registry.NewMemory())
	store := capacity.NewMemory()
	MountCapacity(env.Real(nil), cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	srv := httptest.NewServer(cp.Handler())
	t.Cleanup(srv.Close)
	call := poster(http.DefaultClient, srv.URL)
	code, body := call(workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"name":"w1","version":"1"}`)
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
		t.Fatalf("register: %d %s", code, body)
	}
	codes := make(chan int, 6)
	for range 6 {
		go func() {
			code, _ := call(capacity.PathWatch, reg.Token, capacity.MediaJSON, `{"clusters":["c1"],"waitMillis":10000}`)
			codes <- code
		}()
	}
	got := map[int]int{}
	for range 6 {
		got[<-codes]++
	}
	if got[http.StatusTooManyRequests] != 2 || got[http.StatusOK] != 4 {
		t.Fatalf("six watches of one worker: %v, want four held (200) and two refused (429)", got)
	}
}

// TestWorkerWaitsAtMostSoManyOrderedAcquires: in the ordered queue every waiting acquire is a
// request held open (a connection of its own over HTTP/1.1) for up to a minute. One worker
// sends AcquireWaitsPerWorkerMax+4 at once for a full cluster: the excess four are decided at
// once (denied) instead of held, so one worker cannot fill the listener (or the cluster's queue,
// 10,000 long, that every worker shares) with its waits. Every one is denied: the slot stays
// the worker's own.
func TestWorkerWaitsAtMostSoManyOrderedAcquires(t *testing.T) {
	cp := New(env.Real(nil), testConfig, registry.NewMemory())
	store := capacity.NewMemory()
	MountCapacity(env.Real(nil), cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1", Ordered: true,
		Limits: func(cluster string) (int, time.Duration, bool) { return 1, time.Minute, cluster == "c1" }})
	srv := httptest.NewServer(cp.Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 300}}
	call := poster(client, srv.URL)
	code, body := call(workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"name":"w1","version":"1"}`)
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
		t.Fatalf("register: %d %s", code, body)
	}
	if code, body := call(capacity.PathAcquire, reg.Token, capacity.MediaJSON, `{"cluster":"c1"}`); code != 200 || !strings.Contains(body, `"granted":true`) {
		t.Fatalf("the one slot: %d %s", code, body)
	}
	n := AcquireWaitsPerWorkerMax + 4
	answers := make(chan string, n)
	for range n {
		go func() {
			code, body := call(capacity.PathAcquire, reg.Token, capacity.MediaJSON, `{"cluster":"c1","waitMillis":1500}`)
			answers <- fmt.Sprint(code, " ", strings.Contains(body, `"granted":true`))
		}()
	}
	got := map[string]int{}
	for range n {
		got[<-answers]++
	}
	refused := testutil.ToFloat64(cp.metrics.heldRefused.WithLabelValues("acquire-wait"))
	if got["200 false"] != n || refused != 4 {
		t.Fatalf("%d waiting acquires of one worker: answers %v, %v decided without waiting; want all denied, 4 not held", n, got, refused)
	}
}

// poster POSTs bodies of a media type to baseURL's paths through client, with a bearer token
// unless it is "", and answers the status and body (0 and the error when it got none).
func poster(client *http.Client, baseURL string) func(path, token, media, body string) (int, string) {
	return func(path, token, media, body string) (int, string) {
		req, _ := http.NewRequest("POST", baseURL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", media)
		if token != "" {
			workerapi.SetBearer(req, token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

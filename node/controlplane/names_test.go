package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestWorkerSecretCannotMultiplyPerWorkerLimits: a client holding the worker secret invents
// names to get each its own per-worker limits. With maxWorkers 4 and one real worker
// registered, it gets three names; the fourth and fifth are refused (429 naming
// queryflux.registry.maxWorkers, counted as result "full"), so of the 30 contention watches it
// opens on its names at most 3 x 4 are held. The real worker registers again (a restart) and
// heartbeats while the registry is full, and once the reaper has evicted the silent names a new
// name registers.
func TestWorkerSecretCannotMultiplyPerWorkerLimits(t *testing.T) {
	cfg := testConfig
	cfg.MaxWorkers = 4
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	cp := New(env.Real(nil), cfg, registry.NewMemory())
	store := capacity.NewMemory()
	MountCapacity(env.Real(nil), cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	srv := httptest.NewServer(cp.Handler())
	t.Cleanup(srv.Close)
	call := poster(http.DefaultClient, srv.URL)
	register := func(name string) (int, string, string) {
		code, body := call(workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, fmt.Sprintf(`{"name":%q,"version":"1"}`, name))
		var r workerapi.RegisterResponse
		_ = json.Unmarshal([]byte(body), &r)
		return code, r.Token, body
	}
	if code, _, body := register("real"); code != 200 {
		t.Fatalf("the real worker: %d %s", code, body)
	}
	var tokens []string
	for i := range 5 {
		code, tok, body := register(fmt.Sprintf("fake-%d", i))
		switch {
		case i < 3 && code != 200:
			t.Fatalf("fake-%d, with room left: %d %s", i, code, body)
		case i >= 3 && (code != http.StatusTooManyRequests || !strings.Contains(body, "queryflux.registry.maxWorkers")):
			t.Fatalf("fake-%d past maxWorkers 4: %d %s; want 429 naming queryflux.registry.maxWorkers", i, code, body)
		case code == 200:
			tokens = append(tokens, tok)
		}
	}
	if n := testutil.ToFloat64(cp.metrics.registrations.WithLabelValues("full")); n != 2 {
		t.Fatalf("registrations refused as full: %v, want 2", n)
	}
	codes := make(chan int, 30)
	for i := range 30 {
		go func() {
			code, _ := call(capacity.PathWatch, tokens[i%len(tokens)], capacity.MediaJSON, `{"clusters":["c1"],"waitMillis":2000}`)
			codes <- code
		}()
	}
	got := map[int]int{}
	for range 30 {
		got[<-codes]++
	}
	if got[http.StatusOK] != 3*HeldPerWorkerMax || got[http.StatusTooManyRequests] != 30-3*HeldPerWorkerMax {
		t.Fatalf("30 watches over the invented names: %v, want %d held (200), the rest refused (429)", got, 3*HeldPerWorkerMax)
	}
	code, tok, body := register("real")
	if code != 200 {
		t.Fatalf("the real worker registering again while the registry is full: %d %s", code, body)
	}
	if code, body := call(workerapi.PathHeartbeat, tok, workerapi.MediaHeartbeat, `{"seq":1,"sentAt":"`+time.Now().UTC().Format(time.RFC3339Nano)+`","health":{"state":"healthy"}}`); code != 200 {
		t.Fatalf("the real worker's heartbeat: %d %s", code, body)
	}
	now := time.Now()
	cp.Tick(context.Background(), now.Add(cfg.StaleAfter+time.Second))
	cp.Tick(context.Background(), now.Add(cfg.StaleAfter+cfg.EvictGrace+2*time.Second))
	if code, _, body := register("fake-9"); code != 200 {
		t.Fatalf("a new name once the silent ones are evicted: %d %s", code, body)
	}
}

// TestWorkerCannotTakeAnotherWorkersQueryID: w2 learns w1's query id and sends a record for it
// beside one of its own. Its own is stored; the other is refused by index and id in the ack
// (counted in queryflux_controlplane_history_records_refused_total), and w1's record stays
// w1's. w1 resending its batch is a duplicate, as before.
func TestWorkerCannotTakeAnotherWorkersQueryID(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := history.NewMemory(100)
	h.cp.MountHistory(store)
	w1, w2 := h.register("w1"), h.register("w2")
	now := h.e.Now().UTC().Format(time.RFC3339Nano)
	rec := func(id, user string) string {
		return fmt.Sprintf(`{"queryId":%q,"user":%q,"status":"succeeded","startedAt":%q,"endedAt":%q}`, id, user, now, now)
	}
	post := func(tok, batch string) history.IngestAck {
		t.Helper()
		code, body := h.do("POST", history.PathWorkerHistory, tok, history.MediaQueryRecords, batch)
		var ack history.IngestAck
		if code != 200 || json.Unmarshal(body, &ack) != nil {
			t.Fatalf("history batch: %d %s", code, body)
		}
		return ack
	}
	w1Batch := `{"batchId":"b1","records":[` + rec("q-victim", "alice") + `]}`
	if ack := post(w1, w1Batch); ack.Inserted != 1 {
		t.Fatalf("w1's batch: %+v", ack)
	}
	ack := post(w2, `{"batchId":"b2","records":[`+rec("q-victim", "mallory")+`,`+rec("q-own", "bob")+`]}`)
	if ack.Accepted != 2 || ack.Inserted != 1 || ack.Refused != 1 || ack.Duplicates != 0 || len(ack.RefusedRecords) != 1 ||
		ack.RefusedRecords[0].Index != 0 || ack.RefusedRecords[0].QueryID != "q-victim" || !strings.Contains(ack.RefusedRecords[0].Error, "another worker") {
		t.Fatalf("w2's batch with w1's id: %+v; want q-victim (index 0) refused, q-own stored", ack)
	}
	if n := testutil.ToFloat64(h.cp.metrics.historyRefused.WithLabelValues(history.RefusedForeign)); n != 1 {
		t.Fatalf("refused records counted: %v, want 1", n)
	}
	page, err := store.Query(context.Background(), history.Filter{})
	if err != nil || len(page.Records) != 2 {
		t.Fatalf("stored: %+v, %v", page.Records, err)
	}
	for _, r := range page.Records {
		if r.QueryID == "q-victim" && (r.Worker != "w1" || r.User != "alice") {
			t.Fatalf("w1's record became %+v", r)
		}
	}
	if ack := post(w1, w1Batch); ack.Duplicates != 1 || ack.Refused != 0 {
		t.Fatalf("w1 resending its batch: %+v; want one duplicate", ack)
	}
}

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/workerapi"
)

const (
	historySecret = "history-worker-secret-123"
	historyAdmin  = "history-admin-token-456"
)

// TestHistoryUplinkToControlPlane: a worker's uplink sends proxy records to a real control
// plane (over loopback HTTP), which stores them stamped with the worker's name; the admin API
// reads them back; heartbeats carry the counters; a control plane that forgot the worker's
// session (restart) costs a re-registration, not a record.
func TestHistoryUplinkToControlPlane(t *testing.T) {
	e := env.Real(nil)
	ctx, cancel := e.WithCancel(context.Background())
	defer cancel()
	newCP := func() *controlplane.ControlPlane {
		cp := controlplane.New(e, controlplane.Config{WorkerSecret: historySecret, AdminToken: historyAdmin, AllowShortTimeouts: true}, registry.NewMemory())
		return cp
	}
	store := history.NewMemory(1000)
	cp := newCP()
	cp.MountHistory(store)
	var current http.Handler = cp.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { current.ServeHTTP(w, r) }))
	defer srv.Close()

	w := New(e, Config{ControlPlaneURL: srv.URL, Secret: historySecret, Name: "w-hist", HeartbeatInterval: time.Hour}, &http.Client{})
	u, err := w.NewHistoryUplink(e, history.UplinkConfig{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		u.Add(HistoryRecord(proxy.Record{
			QueryID: fmt.Sprintf("p-%d", i), User: "bob", Protocol: "postgres", Group: "g", Cluster: "c",
			SQL: fmt.Sprintf("select * from accounts where iban = 'DE%d'", 1000+i), Status: proxy.StatusSucceeded,
			Trace: []proxy.TraceStep{{Router: "fallback", Matched: true, Group: "g"}}, Start: start.Add(time.Duration(i) * time.Second), End: start.Add(time.Duration(i)*time.Second + time.Millisecond),
		}))
	}
	// The control plane restarts and forgets every session: the uplink's send re-registers.
	cp2 := newCP()
	cp2.MountHistory(store)
	current = cp2.Handler()
	u.Add(HistoryRecord(proxy.Record{QueryID: "p-denied", Protocol: "mysql", Status: proxy.StatusFailed, ErrorCode: query.CodeQueueFull, Error: "queue full", Start: start, End: start}))
	if err := u.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	page, _ := store.Query(ctx, history.Filter{Worker: "w-hist"})
	if len(page.Records) != 11 {
		t.Fatalf("stored %d records for w-hist, want 11", len(page.Records))
	}
	for _, r := range page.Records {
		if strings.Contains(r.SQL, "DE1") || r.SQLDigest == "" {
			t.Fatalf("literal left the worker: %+v", r)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+history.PathAdminQueries+"?status=rejected", nil)
	workerapi.SetBearer(req, historyAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got history.Page
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || len(got.Records) != 1 || got.Records[0].QueryID != "p-denied" {
		t.Fatalf("admin read: %d %+v %v", resp.StatusCode, got, err)
	}
	if err := w.SendHeartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if wi, _ := cp2.Worker("w-hist"); wi.Heartbeat == nil || wi.Heartbeat.History != (workerapi.HistoryCounters{Sent: 11}) {
		t.Fatalf("heartbeat did not carry the history counters: %+v", wi.Heartbeat)
	}
}

// historyProxyRecord is a routed passthrough query as the proxy core reports it.
func historyProxyRecord() proxy.Record {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return proxy.Record{
		QueryID: "p-1", User: "bob", Protocol: "postgres", Group: "g", Cluster: "c",
		SQL: "select abalance from pgbench_accounts where aid = $1", Status: proxy.StatusSucceeded,
		Trace: []proxy.TraceStep{
			{Router: "protocolBased#0", Reason: "protocol postgres not listed"},
			{Router: "header#1", Matched: true, Group: "g", Reason: "user bob"},
		},
		Start: start, End: start.Add(time.Millisecond),
	}
}

// HistoryRecord's trace lines: the router, whether it matched, the group it chose, and why.
func TestHistoryRecordTraceLines(t *testing.T) {
	r := historyProxyRecord()
	r.Trace = append(r.Trace, proxy.TraceStep{Router: "fallback", Matched: true}, proxy.TraceStep{Router: "script#2"})
	got := HistoryRecord(r).RoutingTrace
	want := []string{"protocolBased#0: no (protocol postgres not listed)", "header#1: matched -> g (user bob)", "fallback: matched", "script#2: no"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("trace %q, want %q", got, want)
	}
	if r.Trace = nil; HistoryRecord(r).RoutingTrace != nil {
		t.Fatal("a record without a trace got one")
	}
}

// The trace lines are memoized by the steps: a trace seen before gives the same lines without
// an allocation, and steps that differ in any field (even where their texts run together, or
// only in Matched) get their own lines, also after the memo was emptied by many traces.
func TestHistoryRecordTraceMemo(t *testing.T) {
	check := func(steps []proxy.TraceStep, want ...string) {
		t.Helper()
		for range 2 {
			r := historyProxyRecord()
			r.Trace = steps
			if got := HistoryRecord(r).RoutingTrace; strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Fatalf("trace %q, want %q", got, want)
			}
		}
	}
	check([]proxy.TraceStep{{Router: "a", Matched: true, Group: "bc"}}, "a: matched -> bc")
	check([]proxy.TraceStep{{Router: "ab", Matched: true, Group: "c"}}, "ab: matched -> c")
	check([]proxy.TraceStep{{Router: "ab", Group: "c"}}, "ab: no")
	check([]proxy.TraceStep{{Router: "ab", Reason: "c"}}, "ab: no (c)")
	check([]proxy.TraceStep{{Router: "ab"}, {Router: "c"}}, "ab: no", "c: no")
	for i := range 2 * traceLinesMax {
		check([]proxy.TraceStep{{Router: "user", Matched: true, Group: "g", Reason: fmt.Sprintf("user u%d", i)}}, fmt.Sprintf("user: matched -> g (user u%d)", i))
	}
	check([]proxy.TraceStep{{Router: "a", Matched: true, Group: "bc"}}, "a: matched -> bc")
	long := strings.Repeat("x", traceKeyMax)
	check([]proxy.TraceStep{{Router: "script", Reason: long}}, "script: no ("+long+")")
	traceLines.Lock()
	size, longest := len(traceLines.m), 0
	for k := range traceLines.m {
		longest = max(longest, len(k))
	}
	traceLines.Unlock()
	if size > traceLinesMax || longest > traceKeyMax {
		t.Fatalf("the memo holds %d traces, the longest key %d bytes: want at most %d and %d", size, longest, traceLinesMax, traceKeyMax)
	}
	r := historyProxyRecord()
	if n := testing.AllocsPerRun(100, func() { _ = HistoryRecord(r) }); n != 0 {
		t.Fatalf("HistoryRecord of a trace seen before allocates %.0f times", n)
	}
}

// TestHistoryRecordTraceOfStepsChangedInPlace: the last trace is remembered by its steps' values,
// not by their array: steps written over in place between two records get their own lines.
func TestHistoryRecordTraceOfStepsChangedInPlace(t *testing.T) {
	r := historyProxyRecord()
	r.Trace = []proxy.TraceStep{{Router: "header#0", Matched: true, Group: "g", Reason: "user a"}}
	for _, user := range []string{"a", "b", "b", "c", "a"} {
		r.Trace[0].Reason = "user " + user
		if got, want := HistoryRecord(r).RoutingTrace, "header#0: matched -> g (user "+user+")"; len(got) != 1 || got[0] != want {
			t.Fatalf("trace %q, want [%q]", got, want)
		}
	}
}

// BenchmarkHistoryRecord is HistoryRecord's cost on the finished query's goroutine.
func BenchmarkHistoryRecord(b *testing.B) {
	r := historyProxyRecord()
	b.ReportAllocs()
	for b.Loop() {
		_ = HistoryRecord(r)
	}
}

// TestHistoryRecordStatus: a failed query the proxy refused before it ran (queue full, denied,
// no route) is "rejected"; any other failure stays "failed", and a success is a success whatever
// its code.
func TestHistoryRecordStatus(t *testing.T) {
	for _, c := range []struct {
		status proxy.Status
		code   string
		want   history.Status
	}{
		{proxy.StatusFailed, query.CodeQueueFull, history.StatusRejected},
		{proxy.StatusFailed, query.CodeAccessDenied, history.StatusRejected},
		{proxy.StatusFailed, "42601", history.Status(proxy.StatusFailed)},
		{proxy.StatusFailed, "", history.Status(proxy.StatusFailed)},
		{proxy.StatusSucceeded, query.CodeQueueFull, history.Status(proxy.StatusSucceeded)},
		{proxy.StatusSucceeded, "", history.Status(proxy.StatusSucceeded)},
	} {
		r := historyProxyRecord()
		r.Status, r.ErrorCode = c.status, c.code
		if got := HistoryRecord(r).Status; got != c.want {
			t.Errorf("a %s query with code %q recorded as %q, want %q", c.status, c.code, got, c.want)
		}
	}
}

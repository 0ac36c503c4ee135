package worker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Answers of a control plane in front of a real one (answering).
const (
	answering   = iota
	failing     // 503 whose error text carries the worker's secret
	unreadable  // 200 with a body that is not the answer
	partialTake // history: 200 taking none of the records
	slower      // heartbeat: 200 asking for a heartbeat every 7 s
)

// TestHeartbeatAnswersAreRecorded: each heartbeat's outcome is returned, counted
// (queryflux_worker_heartbeats_total by result), and shown in the status (consecutive failures,
// the last error without the worker's secret, when it was sent); the first failure in a row is
// logged, and the recovery once. History batches: a refusal is the control plane's status, an
// unreadable or partial acknowledgement an error naming it.
func TestHeartbeatAnswersAreRecorded(t *testing.T) {
	f := newFleet(t)
	var mode atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != workerapi.PathHeartbeat && r.URL.Path != history.PathWorkerHistory {
			f.cp.Handler().ServeHTTP(rw, r)
			return
		}
		switch mode.Load() {
		case failing:
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusServiceUnavailable)
			_, _ = rw.Write([]byte(`{"error":"store down, worker secret ` + secret + `"}`))
		case unreadable:
			rw.WriteHeader(http.StatusOK)
			_, _ = rw.Write([]byte(`<html>a proxy's page</html>`))
		case partialTake:
			rw.WriteHeader(http.StatusOK)
			_, _ = rw.Write([]byte(`{"accepted":0}`))
		case slower:
			rw.Header().Set("Content-Type", "application/json")
			_, _ = rw.Write([]byte(`{"state":"active","heartbeatIntervalSecs":7}`))
		default:
			if r.URL.Path == history.PathWorkerHistory {
				_, _ = rw.Write([]byte(`{"accepted":1}`))
				return
			}
			f.cp.Handler().ServeHTTP(rw, r)
		}
	}))
	t.Cleanup(srv.Close)
	w := New(f.e, Config{ControlPlaneURL: srv.URL, Secret: secret, Name: "w-beat", Version: "1.0",
		HeartbeatInterval: time.Hour, HealthProbeInterval: time.Hour, LagThreshold: time.Hour}, &http.Client{})
	ctx := context.Background()
	beat := func(want int32) error {
		t.Helper()
		mode.Store(want)
		before := time.Now()
		err := w.SendHeartbeat(ctx)
		w.logHeartbeatResult(ctx, err)
		if st := w.Status(); st.LastHeartbeatSentAt.Before(before) {
			t.Fatalf("status: last heartbeat sent at %v, before this one (%v)", st.LastHeartbeatSentAt, before)
		}
		return err
	}
	count := func(result string) float64 { return testutil.ToFloat64(w.metrics.heartbeats.WithLabelValues(result)) }

	if err := beat(answering); err != nil {
		t.Fatal(err)
	}
	err := beat(failing)
	var se *workerapi.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable {
		t.Fatalf("a heartbeat answered 503: %v; want the control plane's status", err)
	}
	st := w.Status()
	if st.ConsecutiveFailures != 1 || st.LastError == "" || strings.Contains(st.LastError, secret) {
		t.Fatalf("status after a failure: %d failures, last error %q; want 1, an error without the secret", st.ConsecutiveFailures, st.LastError)
	}
	if err := beat(unreadable); err == nil || !strings.Contains(err.Error(), "unreadable heartbeat answer") {
		t.Fatalf("a heartbeat answered with a page: %v; want an unreadable answer", err)
	}
	if st := w.Status(); st.ConsecutiveFailures != 2 {
		t.Fatalf("status: %d failures in a row, want 2", st.ConsecutiveFailures)
	}
	if ok, failed := count("ok"), count("error"); ok != 1 || failed != 2 {
		t.Fatalf("heartbeats counted ok %v, error %v; want 1 and 2", ok, failed)
	}
	if err := beat(answering); err != nil {
		t.Fatal(err)
	}
	if err := beat(answering); err != nil {
		t.Fatal(err)
	}
	if st := w.Status(); st.ConsecutiveFailures != 0 || st.LastError != "" {
		t.Fatalf("status after a success: %d failures, last error %q; want none", st.ConsecutiveFailures, st.LastError)
	}
	logs := f.logs.String()
	if n := strings.Count(logs, "heartbeat failed"); n != 1 {
		t.Fatalf("%d heartbeat failures logged, want the first of the two in a row:\n%s", n, logs)
	}
	if n := strings.Count(logs, "heartbeats reach the control plane again"); n != 1 {
		t.Fatalf("%d recoveries logged, want one:\n%s", n, logs)
	}
	if !strings.Contains(logs, "HTTP 503: store down") || strings.Contains(logs, secret) {
		t.Fatalf("the log shows the worker's secret, or not the failure:\n%s", logs)
	}
	// The heartbeat duty itself logs the same way; a beat cut short by the worker's stop (its
	// context ended) is no control-plane failure and logs nothing.
	mode.Store(failing)
	w.beat(ctx, time.Time{})
	mode.Store(answering)
	w.beat(ctx, time.Time{})
	// The interval the control plane answers is the worker's from then on (it may change after
	// the registration: a control plane's configuration reloaded).
	mode.Store(slower)
	beatAt := f.e.Now()
	if next := w.beat(ctx, time.Time{}).Sub(beatAt); next < 6*time.Second || next > 8*time.Second {
		t.Fatalf("after a heartbeat answered with a 7 s interval the next is due in %v, want about 7 s", next)
	}
	mode.Store(answering)
	w.beat(ctx, time.Time{})
	stopped, stop := context.WithCancel(ctx)
	stop()
	w.beat(stopped, time.Time{})
	logs = f.logs.String()
	if failed, back := strings.Count(logs, "heartbeat failed"), strings.Count(logs, "heartbeats reach the control plane again"); failed != 2 || back != 2 {
		t.Fatalf("after the duty's failed and answered beats and a beat of a stopped worker: %d failures and %d recoveries logged, want 2 and 2:\n%s", failed, back, logs)
	}

	// A control plane that cannot be reached at all: an error counted and shown, no answer read.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	gone := New(f.e, Config{ControlPlaneURL: down.URL, Secret: secret, Name: "w-gone", Version: "1.0",
		HeartbeatInterval: time.Hour, HealthProbeInterval: time.Hour, LagThreshold: time.Hour}, &http.Client{})
	if err := gone.SendHeartbeat(ctx); err == nil || gone.Status().ConsecutiveFailures != 1 ||
		testutil.ToFloat64(gone.metrics.heartbeats.WithLabelValues("error")) != 1 {
		t.Fatalf("a heartbeat to a control plane that is not there: %v, %d failures; want an error, counted", err, gone.Status().ConsecutiveFailures)
	}
	if err := gone.sendHistory(ctx, &history.QueryRecordBatchV1{Records: []history.Record{{QueryID: "q-0"}}}); err == nil {
		t.Fatal("a history batch to a control plane that is not there: no error")
	}

	batch := &history.QueryRecordBatchV1{Records: []history.Record{{QueryID: "q-1", User: "bob", Status: "succeeded"}}}
	mode.Store(answering)
	if err := w.sendHistory(ctx, batch); err != nil {
		t.Fatalf("a history batch taken: %v", err)
	}
	mode.Store(failing)
	if err := w.sendHistory(ctx, batch); !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable {
		t.Fatalf("a history batch answered 503: %v; want the control plane's status", err)
	}
	mode.Store(unreadable)
	if err := w.sendHistory(ctx, batch); err == nil || !strings.Contains(err.Error(), "history ack") {
		t.Fatalf("a history batch answered with a page: %v; want an unreadable ack", err)
	}
	mode.Store(partialTake)
	if err := w.sendHistory(ctx, batch); err == nil || !strings.Contains(err.Error(), "took 0 of 1") {
		t.Fatalf("a history batch half taken: %v; want the records not taken named", err)
	}
}

// TestUnhealthyHeartbeatIsSentAtOnce: a change of the worker's self-health is told to the
// control plane at once, not at the next heartbeat (here an hour away: the control plane's
// answers ask for one an hour), and the loop lag it saw is the gauge's.
func TestUnhealthyHeartbeatIsSentAtOnce(t *testing.T) {
	f := newFleet(t)
	slow := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != workerapi.PathHeartbeat {
			f.cp.Handler().ServeHTTP(rw, r)
			return
		}
		rec := httptest.NewRecorder()
		f.cp.Handler().ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			rw.WriteHeader(rec.Code)
			_, _ = rw.Write(rec.Body.Bytes())
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"state":"active","heartbeatIntervalSecs":3600}`))
	}))
	t.Cleanup(slow.Close)
	w := f.worker("w1", nil, func(c *Config) { c.ControlPlaneURL, c.HealthProbeInterval = slow.URL, time.Hour })
	w.Start(f.ctx)
	f.eventually("first beat", func() bool { return w.Status().LastHeartbeatAckAt.After(time.Time{}) })
	before := w.Status().HeartbeatSeq
	for range 3 {
		w.ObserveLag(f.e.Now(), time.Second)
	}
	if lag := testutil.ToFloat64(w.metrics.loopLag); lag != 1 {
		t.Fatalf("loop lag gauge %v after a probe that woke 1 s late, want 1", lag)
	}
	f.eventually("an immediate beat", func() bool { return f.info("w1").Health == workerapi.HealthUnhealthy })
	if w.Status().HeartbeatSeq <= before {
		t.Fatal("no new heartbeat")
	}
	w.ObserveLag(f.e.Now(), 0)
	if lag := testutil.ToFloat64(w.metrics.loopLag); lag != 0 {
		t.Fatalf("loop lag gauge %v after a probe on time, want 0", lag)
	}
}

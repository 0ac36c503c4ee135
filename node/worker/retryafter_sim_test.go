package worker_test

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/sim"
)

// retryAfterCP is a control plane, in the simulator, that refuses each path's first requests
// with the status and Retry-After given for them in order, then takes them; it notes when
// (simulated time) each request came.
type retryAfterCP struct {
	mu      sync.Mutex
	answers map[string][]refusal
	seen    map[string][]time.Duration
}

type refusal struct {
	status     int
	retryAfter string
}

func (cp *retryAfterCP) handler(n *sim.Node, start time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.mu.Lock()
		cp.seen[r.URL.Path] = append(cp.seen[r.URL.Path], n.Env().Now().Sub(start))
		var refuse *refusal
		if q := cp.answers[r.URL.Path]; len(q) > 0 {
			refuse, cp.answers[r.URL.Path] = &q[0], q[1:]
		}
		cp.mu.Unlock()
		if refuse != nil {
			w.Header().Set("Retry-After", refuse.retryAfter)
			workerapi.WriteError(w, refuse.status, "busy", "")
			return
		}
		switch r.URL.Path {
		case workerapi.PathRegister:
			workerapi.WriteJSON(w, http.StatusOK, workerapi.MediaWorkerRegistered, workerapi.RegisterResponse{Name: "w1", Token: "tok", HeartbeatIntervalSecs: 1})
		case workerapi.PathHeartbeat:
			workerapi.WriteHeartbeatAck(w, workerapi.HeartbeatAck{State: workerapi.StateHealthy, HeartbeatIntervalSecs: 1})
		case history.PathWorkerHistory:
			data, err := io.ReadAll(r.Body)
			var b *history.QueryRecordBatchV1
			if err == nil {
				b, err = history.DecodeBatch(data)
			}
			if err != nil {
				workerapi.WriteError(w, http.StatusBadRequest, err.Error(), "")
				return
			}
			workerapi.WriteJSON(w, http.StatusOK, "application/json", history.IngestAck{BatchID: b.BatchID, Accepted: len(b.Records)})
		default:
			workerapi.WriteError(w, http.StatusNotFound, "no such path", "")
		}
	})
}

// gaps are the times between path's requests.
func (cp *retryAfterCP) gaps(path string) []time.Duration {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(cp.seen[path]); i++ {
		out = append(out, cp.seen[path][i]-cp.seen[path][i-1])
	}
	return out
}

// TestSimWorkerHonoursRetryAfter: a control plane that answers 429 or 503 with Retry-After
// hears the worker's next registration, heartbeat or history batch no sooner (on the
// simulator's clock, which the worker reads through its Env), the wait capped at a minute; a
// garbled header gets the worker's own backoff. Before: the registration was tried again at
// the next heartbeat (1 s), heartbeats kept their interval, the uplink its backoff (500 ms).
func TestSimWorkerHonoursRetryAfter(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 3})
	t.Cleanup(s.Close)
	cp := &retryAfterCP{seen: map[string][]time.Duration{}, answers: map[string][]refusal{
		workerapi.PathRegister:    {{http.StatusTooManyRequests, "20"}, {http.StatusServiceUnavailable, "9"}},
		workerapi.PathHeartbeat:   {{http.StatusServiceUnavailable, "7"}, {http.StatusServiceUnavailable, "12abc"}, {http.StatusTooManyRequests, "3600"}},
		history.PathWorkerHistory: {{http.StatusServiceUnavailable, "12"}, {http.StatusTooManyRequests, "1e3"}},
	}}
	var start time.Time
	s.AddNode("cp", func(n *sim.Node) http.Handler {
		start = n.Env().Now()
		return cp.handler(n, start)
	})
	s.AddNode("w1", func(n *sim.Node) http.Handler {
		w := worker.New(n.Env(), worker.Config{ControlPlaneURL: "http://cp", Secret: "s3cret", Name: "w1"}, n.Client())
		w.Start(n.Ctx())
		u, err := w.NewHistoryUplink(n.Env(), history.UplinkConfig{FlushInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		u.Start(n.Ctx())
		u.Add(history.Record{QueryID: "q1", SQL: "SELECT 1", Status: history.StatusSucceeded})
		return w.OpsHandler()
	})
	if err := s.Run(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	atLeast := func(what string, gaps []time.Duration, wants ...time.Duration) {
		t.Helper()
		if len(gaps) < len(wants) {
			t.Fatalf("%s: gaps %v, want at least %d", what, gaps, len(wants))
		}
		for i, want := range wants {
			// want < 0: no sooner than -want's default (the backoff or interval), and well before
			// what a wrongly honoured header would have asked.
			if want > 0 && gaps[i] < want || want > 0 && gaps[i] > want+2*time.Second || want < 0 && gaps[i] > -want {
				t.Errorf("%s: gap %d is %v (all: %v), want %v", what, i, gaps[i], gaps, want)
			}
		}
	}
	atLeast("registrations", cp.gaps(workerapi.PathRegister), 20*time.Second, 9*time.Second)
	// 7 s; "12abc": the interval (1 s); 3600: capped at a minute.
	atLeast("heartbeats", cp.gaps(workerapi.PathHeartbeat), 7*time.Second, -2*time.Second, time.Minute)
	// 12 s; "1e3": the uplink's backoff (under 10 s: its sends failed some times while the
	// registration waited).
	atLeast("history batches", cp.gaps(history.PathWorkerHistory), 12*time.Second, -10*time.Second)
}

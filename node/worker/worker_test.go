package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

const (
	secret     = "the-shared-worker-secret"
	adminToken = "the-admin-token"
)

// lagEnv is the real Env whose sleeps wake late by a settable amount: a starved process.
type lagEnv struct {
	env.Env
	lag atomic.Int64
}

func (l *lagEnv) Sleep(ctx context.Context, d time.Duration) error {
	return l.Env.Sleep(ctx, d+time.Duration(l.lag.Load()))
}

type fleet struct {
	t    *testing.T
	ctx  context.Context
	e    env.Env
	logs *logbuf.Buffer
	cp   *controlplane.ControlPlane
	srv  *httptest.Server
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	logs := &logbuf.Buffer{}
	e := env.Real(slog.New(slog.NewTextHandler(logs, nil)))
	ctx, cancel := e.WithCancel(context.Background())
	t.Cleanup(cancel)
	cp := controlplane.New(e, controlplane.Config{
		WorkerSecret: secret, AdminToken: adminToken, AllowShortTimeouts: true,
		HeartbeatInterval: 50 * time.Millisecond, StaleAfter: 2 * time.Second, EvictGrace: 2 * time.Second,
	}, registry.NewMemory())
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cp.Handler())
	t.Cleanup(srv.Close)
	return &fleet{t: t, ctx: ctx, e: e, logs: logs, cp: cp, srv: srv}
}

func (f *fleet) worker(name string, e env.Env, tweak func(*Config)) *Worker {
	cfg := Config{ControlPlaneURL: f.srv.URL, Secret: secret, Name: name, Version: "1.0",
		Labels: map[string]string{"zone": "eu"}, Frontends: []string{"postgres"},
		HeartbeatInterval: time.Second, HealthProbeInterval: 50 * time.Millisecond, LagThreshold: 100 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	if e == nil {
		e = f.e
	}
	return New(e, cfg, &http.Client{})
}

// eventually polls cond for up to 5 s.
func (f *fleet) eventually(what string, cond func() bool) {
	f.t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		_ = f.e.Sleep(f.ctx, 10*time.Millisecond)
	}
	f.t.Fatalf("timed out waiting for %s", what)
}

func (f *fleet) info(name string) workerapi.WorkerInfo {
	wi, _ := f.cp.Worker(name)
	return wi
}

func TestRegistersAndHeartbeatsWithContributedFields(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	w.AddHeartbeatContributor(func(hb *workerapi.Heartbeat) {
		hb.Revision = workerapi.RevisionStatus{Active: "rev-7", LastSeen: "rev-8"}
		hb.History = workerapi.HistoryCounters{Sent: 5, Dropped: 1, Pending: 2}
		hb.Coordination.Policy = "remote"
	})
	var acks atomic.Int32
	w.OnHeartbeatAck(func(ack workerapi.HeartbeatAck) {
		if ack.State == workerapi.StateHealthy {
			acks.Add(1)
		}
	})
	f.cp.SetCurrentRevision("rev-7")
	w.Start(f.ctx)
	f.eventually("three heartbeats", func() bool { return acks.Load() >= 3 })
	wi := f.info("w1")
	if !wi.Online || wi.Revision != "rev-7" || !wi.Current || wi.Heartbeat.History.Dropped != 1 || wi.Heartbeat.Coordination.Policy != "remote" {
		t.Fatalf("control plane sees %+v", wi)
	}
	if st := w.Status(); !st.Registered || st.Registrations != 1 || st.HeartbeatIntervalSecs != 0.05 || st.CurrentRevision != "rev-7" ||
		st.Revision.LastSeen != "rev-8" || st.History.Pending != 2 || st.Coordination.Policy != "remote" {
		t.Fatalf("status %+v (the worker must adopt the control plane's interval and show the contributed sections)", st)
	}
}

// TestStatusShowsPeers: /worker/status shows the peer list the worker routes and forwards by.
func TestStatusShowsPeers(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	if err := w.SetEndpoints(map[string]string{"trino": "http://127.0.0.1:18080"}); err != nil {
		t.Fatal(err)
	}
	w.Start(f.ctx)
	f.eventually("w1 a healthy peer in its own status", func() bool {
		peers := w.Status().Peers
		return len(peers) == 1 && peers[0].Name == "w1" && peers[0].Healthy && peers[0].Endpoints["trino"] == "http://127.0.0.1:18080"
	})
}

// echo serves POST /worker/echo on the control plane: the calling worker's name and the body.
func (f *fleet) echo() {
	f.cp.HandleWorker("POST /worker/echo", func(rw http.ResponseWriter, r *http.Request, worker string) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(rw, worker+":"+string(body))
	})
}

// supersede registers someone else under name: that worker's token is superseded.
func (f *fleet) supersede(name string) {
	req, _ := http.NewRequest("POST", f.srv.URL+workerapi.PathRegister, strings.NewReader(`{"name":"`+name+`","version":"2"}`))
	req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	workerapi.SetBearer(req, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		f.t.Fatalf("steal: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestDoRegistersAgainOn401(t *testing.T) {
	f := newFleet(t)
	f.echo()
	w := f.worker("w1", nil, nil)
	call := func() string {
		req, _ := http.NewRequest("POST", "/worker/echo", strings.NewReader("payload"))
		resp, err := w.Do(f.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		return string(body)
	}
	if got := call(); got != "w1:payload" {
		t.Fatalf("first call: %q", got)
	}
	f.supersede("w1") // someone registers under the same name
	if got := call(); got != "w1:payload" {
		t.Fatalf("call after the token was superseded: %q (body must be replayed)", got)
	}
	if st := w.Status(); st.Registrations != 2 {
		t.Fatalf("registrations %d, want 2", st.Registrations)
	}
}

// Do's attempts each send the whole body, whether the request can make it again (GetBody: a
// strings or bytes reader) or not (any other reader: read once, sent from a copy), and the
// caller's request keeps its header and URL. The worker's client reads each body whole before
// sending it, as the simulator's network does, so an attempt that got a drained body shows.
func TestDoReplaysEitherBodyAndLeavesTheRequestAlone(t *testing.T) {
	f := newFleet(t)
	f.echo()
	w := f.worker("w1", nil, nil)
	w.client = &http.Client{Transport: readWholeBody{http.DefaultTransport}}
	for _, tc := range []struct {
		name string
		body func() io.Reader
	}{
		{"GetBody", func() io.Reader { return strings.NewReader("payload") }},
		{"read once", func() io.Reader { return io.MultiReader(strings.NewReader("pay"), strings.NewReader("load")) }},
	} {
		for _, superseded := range []bool{false, true} {
			if superseded {
				f.supersede("w1") // the first attempt gets a 401: the second sends the body again
			}
			req, _ := http.NewRequest("POST", "/worker/echo", tc.body())
			req.Header.Set("X-Kept", "yes")
			resp, err := w.Do(f.ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "w1:payload" {
				t.Fatalf("%s, superseded %v: answer %d %q, want the whole body echoed", tc.name, superseded, resp.StatusCode, body)
			}
			if got := req.Header; len(got) != 1 || got.Get("X-Kept") != "yes" || req.URL.String() != "/worker/echo" || req.Host != "" {
				t.Fatalf("%s: Do wrote to the caller's request: header %v, URL %s, Host %q", tc.name, got, req.URL, req.Host)
			}
		}
	}
	if st := w.Status(); st.Registrations != 3 {
		t.Fatalf("registrations %d, want 3", st.Registrations)
	}
}

// Post sends its body whole with its media type on the first attempt and, after a 401, on
// the second, with the new session's token, and keeps nothing of the body it was given.
func TestPostSendsTheBodyOnEitherAttempt(t *testing.T) {
	f := newFleet(t)
	f.cp.HandleWorker("POST /worker/echo", func(rw http.ResponseWriter, r *http.Request, worker string) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(rw, worker+":"+r.Header.Get("Content-Type")+":"+string(body))
	})
	w := f.worker("w1", nil, nil)
	w.client = &http.Client{Transport: readWholeBody{http.DefaultTransport}}
	for _, superseded := range []bool{false, true} {
		if superseded {
			f.supersede("w1") // the first attempt gets a 401: the second sends the body again
		}
		body := []byte("payload")
		resp, err := w.Post(f.ctx, "/worker/echo", "application/x-test", body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "w1:application/x-test:payload" {
			t.Fatalf("superseded %v: answer %d %q, want the whole body echoed with its media type", superseded, resp.StatusCode, got)
		}
		if string(body) != "payload" {
			t.Fatalf("Post wrote to the caller's body: %q", body)
		}
	}
	if st := w.Status(); st.Registrations != 2 {
		t.Fatalf("registrations %d, want 2", st.Registrations)
	}
}

// readWholeBody is a transport that reads a request's body whole before it sends it.
type readWholeBody struct{ next http.RoundTripper }

func (rt readWholeBody) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	return rt.next.RoundTrip(req)
}

func TestConcurrentCallersShareOneRegistration(t *testing.T) {
	f := newFleet(t)
	f.cp.HandleWorker("GET /worker/ping", func(rw http.ResponseWriter, r *http.Request, worker string) {})
	w := f.worker("w1", nil, nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		f.e.Go(f.ctx, "caller", func(ctx context.Context) {
			defer wg.Done()
			req, _ := http.NewRequest("GET", "/worker/ping", nil)
			if resp, err := w.Do(ctx, req); err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if n := w.Status().Registrations; n != 1 {
		t.Fatalf("%d registrations for 8 concurrent first calls", n)
	}
}

func TestSelfHealthGoesUnhealthyAndRecovers(t *testing.T) {
	f := newFleet(t)
	le := &lagEnv{Env: f.e}
	w := f.worker("w1", le, func(c *Config) { c.HeartbeatInterval = time.Hour })
	ops := httptest.NewServer(w.OpsHandler())
	defer ops.Close()
	w.Start(f.ctx)
	f.eventually("registered and healthy", func() bool { return f.info("w1").Health == workerapi.HealthHealthy })
	readyz := func() int {
		resp, err := http.Get(ops.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := readyz(); code != 200 {
		t.Fatalf("readyz while healthy: %d", code)
	}
	le.lag.Store(int64(300 * time.Millisecond))
	// The control plane's interval is 50ms here, so cap the wait below what a routine beat
	// would need to matter: the unhealthy beat must be pushed at once.
	f.eventually("worker unhealthy", func() bool { return w.Status().Health.State == workerapi.HealthUnhealthy })
	f.eventually("control plane told", func() bool { return f.info("w1").Health == workerapi.HealthUnhealthy })
	if code := readyz(); code != 503 {
		t.Fatalf("readyz while unhealthy: %d", code)
	}
	if ws := f.info("w1").Warnings; !strings.Contains(strings.Join(ws, ";"), "unhealthy") {
		t.Fatalf("admin warnings %v", ws)
	}
	le.lag.Store(0)
	f.eventually("worker recovered", func() bool { return w.Status().Health.State == workerapi.HealthHealthy })
	f.eventually("readyz 200", func() bool { return readyz() == 200 })
	resp, err := http.Get(ops.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`queryflux_worker_health_transitions_total{state="unhealthy"} 1`,
		`queryflux_worker_health_transitions_total{state="healthy"} 1`, "queryflux_worker_loop_lag_seconds"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestOpsOutputNeverShowsCredentials(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, func(c *Config) {
		c.ControlPlaneURL = strings.Replace(f.srv.URL, "http://", "http://user:urlpassword@", 1)
	})
	w.AddReadinessCheck("config", func() error { return io.ErrUnexpectedEOF })
	w.Start(f.ctx)
	f.eventually("registered", func() bool { return w.Status().Registered })
	// Make the last error non-empty too: a heartbeat refused by a stopped server.
	ops := httptest.NewServer(w.OpsHandler())
	defer ops.Close()
	var out bytes.Buffer
	for _, path := range []string{"/worker/status", "/metrics", "/readyz", "/health"} {
		resp, err := http.Get(ops.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(&out, resp.Body)
		resp.Body.Close()
	}
	token := w.token
	for _, s := range []string{secret, token, "urlpassword"} {
		if s == "" || strings.Contains(out.String(), s) || strings.Contains(f.logs.String(), s) {
			t.Fatalf("credential %q leaked (empty means no token was issued)", s)
		}
	}
	var st Status
	resp, err := http.Get(ops.URL + "/worker/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Name != "w1" || st.Ready {
		t.Fatalf("status %+v %v", st, err)
	}
}

func TestDoSendsTheTokenOnlyToTheControlPlane(t *testing.T) {
	f := newFleet(t)
	var leaked atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization") != "")
	}))
	defer other.Close()
	w := f.worker("w1", nil, nil)
	req, _ := http.NewRequest("GET", other.URL+"/x", nil)
	if resp, err := w.Do(f.ctx, req); err == nil {
		resp.Body.Close()
		t.Fatal("Do called another host")
	}
	if leaked.Load() {
		t.Fatal("token sent to another host")
	}
}

func TestOversizedContributionsAreTrimmedNotRefused(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	w.AddHeartbeatContributor(func(hb *workerapi.Heartbeat) {
		hb.Config.LastSyncError = strings.Repeat("x", 10000)
		hb.Config.StalenessSecs = -3 // a control plane clock ahead of ours
	})
	if err := w.SendHeartbeat(f.ctx); err != nil {
		t.Fatalf("heartbeat refused: %v", err)
	}
	if hb := f.info("w1").Heartbeat; hb == nil || len(hb.Config.LastSyncError) > workerapi.ShortTextLengthMax {
		t.Fatalf("stored heartbeat %+v", hb)
	}
	// /worker/status shows the sections as the next heartbeat carries them: trimmed too.
	if st := w.Status(); len(st.Config.LastSyncError) > workerapi.ShortTextLengthMax || st.Config.StalenessSecs < 0 {
		t.Fatalf("status shows the contribution untrimmed: %d bytes of error, staleness %v", len(st.Config.LastSyncError), st.Config.StalenessSecs)
	}
}

func TestHandleOpsMountsOnTheOpsListener(t *testing.T) {
	f := newFleet(t)
	w := f.worker("w1", nil, nil)
	w.HandleOps("GET /worker/extra", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(rw, "extra")
	}))
	ops := httptest.NewServer(w.OpsHandler())
	defer ops.Close()
	resp, err := http.Get(ops.URL + "/worker/extra")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "extra" {
		t.Fatalf("got %d %q, want 200 extra", resp.StatusCode, body)
	}
}

package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

const (
	csSecret     = "config-serve-secret-789"
	csAdminToken = "config-admin-token-654"
)

// csSnapshot builds a snapshot of a one-cluster config whose cap is maxRunning.
func csSnapshot(t *testing.T, maxRunning int) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	return snapshotOf(t, fmt.Appendf(nil, `
clusters: [{name: c, engine: sim, maxRunningQueries: %d}]
clusterGroups: [{name: g, members: [c]}]
routingFallback: g
`, maxRunning))
}

// snapshotOf builds the snapshot of a YAML configuration.
func snapshotOf(t *testing.T, src []byte) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	cfg, err := config.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Build(cfg, snapshot.Options{ConfirmedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

type csHarness struct {
	t     *testing.T
	e     env.Env
	cp    *ControlPlane
	srv   *ConfigServer
	token string
}

func newCSHarness(t *testing.T, poll time.Duration) *csHarness {
	t.Helper()
	e := env.Real(nil)
	cp := New(e, Config{WorkerSecret: csSecret, AdminToken: csAdminToken, AllowShortTimeouts: true}, registry.NewMemory())
	srv := NewConfigServer(e, poll)
	srv.Mount(cp)
	h := &csHarness{t: t, e: e, cp: cp, srv: srv}
	code, body := h.get(workerapi.PathRegister, csSecret, nil, "POST",
		`{"name":"w1","version":"1","labels":{},"frontends":[]}`)
	if code != 200 {
		t.Fatalf("register: %d %s", code, body)
	}
	var resp workerapi.RegisterResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	h.token = resp.Token
	return h
}

func (h *csHarness) get(path, token string, header http.Header, method, body string) (int, string) {
	code, _, b := h.do(path, token, header, method, body)
	return code, b
}

func (h *csHarness) do(path, token string, header http.Header, method, body string) (int, http.Header, string) {
	h.t.Helper()
	if method == "" {
		method = "GET"
	}
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == "POST" {
		req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		workerapi.SetBearer(req, token)
	}
	rec := httptest.NewRecorder()
	h.cp.Handler().ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, rec.Header(), string(b)
}

func TestConfigEndpoint(t *testing.T) {
	h := newCSHarness(t, time.Second)
	if code, _ := h.get(snapshot.PathConfig, h.token, nil, "", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("before publish: %d, want 503", code)
	}
	s1 := csSnapshot(t, 1)
	if err := h.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	if h.cp.CurrentRevision() != s1.Revision {
		t.Fatal("control plane's current revision not updated")
	}
	code, hdr, body := h.do(snapshot.PathConfig, h.token, nil, "", "")
	if code != 200 || hdr.Get("Content-Type") != snapshot.MediaType || hdr.Get("ETag") != snapshot.ETag(s1.Revision) {
		t.Fatalf("GET: %d %v", code, hdr)
	}
	got, err := snapshot.Decode([]byte(body))
	if err != nil || got.Revision != s1.Revision {
		t.Fatalf("decode served snapshot: %v", err)
	}
	code, _ = h.get(snapshot.PathConfig, h.token, http.Header{"If-None-Match": {snapshot.ETag(s1.Revision)}}, "", "")
	if code != http.StatusNotModified {
		t.Fatalf("If-None-Match current: %d, want 304", code)
	}
	if code, _ = h.get(snapshot.PathConfig, "", nil, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("without a session token: %d, want 401", code)
	}
	if code, _ = h.get(snapshot.PathConfig, csSecret, nil, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("with the shared secret instead of a session token: %d, want 401", code)
	}
}

func TestConfigWaitAnswersAtOnceForAnOldRevision(t *testing.T) {
	h := newCSHarness(t, time.Minute)
	s1 := csSnapshot(t, 1)
	_ = h.srv.Publish(s1)
	start := time.Now()
	code, body := h.get(snapshot.PathConfigWait+"?revision=old", h.token, nil, "", "")
	if code != 200 || !strings.Contains(body, s1.Revision) {
		t.Fatalf("wait with an old revision: %d %s", code, body)
	}
	if time.Since(start) > 30*time.Second { // half the poll timeout: a margin for a loaded machine
		t.Fatal("wait with an old revision blocked")
	}
}

func TestConfigWaitTimesOutWith304(t *testing.T) {
	h := newCSHarness(t, 50*time.Millisecond)
	s1 := csSnapshot(t, 1)
	_ = h.srv.Publish(s1)
	code, hdr, _ := h.do(snapshot.PathConfigWait+"?revision="+s1.Revision, h.token, nil, "", "")
	if code != http.StatusNotModified || hdr.Get(snapshot.HeaderConfirmedAt) == "" {
		t.Fatalf("wait on the current revision: %d %v, want 304 with %s", code, hdr, snapshot.HeaderConfirmedAt)
	}
	if code, _ := h.get(snapshot.PathConfigWait+"?revision=x&timeoutSecs=zero", h.token, nil, "", ""); code != 400 {
		t.Fatalf("bad timeoutSecs: %d, want 400", code)
	}
}

// TestConfigWaitWakesOnPublish: a parked long-poll answers with the new snapshot as soon as it
// is published, and republishing the same revision wakes nobody.
func TestConfigWaitWakesOnPublish(t *testing.T) {
	h := newCSHarness(t, time.Minute)
	s1, s2 := csSnapshot(t, 1), csSnapshot(t, 2)
	_ = h.srv.Publish(s1)
	var wg sync.WaitGroup
	var code int
	var body string
	wg.Add(1)
	h.e.Go(context.Background(), "long-poll", func(context.Context) {
		defer wg.Done()
		code, body = h.get(snapshot.PathConfigWait+"?revision="+s1.Revision, h.token, nil, "", "")
	})
	h.waitFor(func() bool { return h.srv.Waiting() == 1 })
	changes := 0
	h.srv.OnChange(func(string) { changes++ })
	seq := h.srv.changed.Seq()
	_ = h.srv.Publish(s1) // same revision: must not wake the poll (Publish notifies before it returns)
	if h.srv.changed.Seq() != seq || changes != 0 {
		t.Fatal("republishing the current revision woke the long-polls")
	}
	start := time.Now()
	_ = h.srv.Publish(s2)
	wg.Wait()
	if code != 200 || !strings.Contains(body, s2.Revision) {
		t.Fatalf("woken poll: %d %s", code, body)
	}
	if time.Since(start) > 30*time.Second { // half the poll timeout: a margin for a loaded machine
		t.Fatal("the poll was not woken by Publish")
	}
}

func (h *csHarness) waitFor(cond func() bool) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatal("condition not reached")
		}
	}
}

// TestRunConfigRefresh: builds at start and on each wake; a failing build keeps the old snapshot.
func TestRunConfigRefresh(t *testing.T) {
	h := newCSHarness(t, time.Minute)
	rev := func() string {
		if c := h.srv.Current(); c != nil {
			return c.Revision
		}
		return ""
	}
	var mu sync.Mutex
	next, fail := 1, false
	var builds int
	var servedAtBuild []string // the revision served when each build starts
	src := func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
		mu.Lock()
		defer mu.Unlock()
		builds++
		servedAtBuild = append(servedAtBuild, rev())
		if fail {
			return nil, errors.New("store down")
		}
		return csSnapshot(t, next), nil
	}
	wake := h.e.NewSignal()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	h.e.Go(ctx, "refresh", func(ctx context.Context) {
		defer wg.Done()
		if err := h.srv.RunConfigRefresh(ctx, src, wake, time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("RunConfigRefresh returned %v", err)
		}
	})
	h.waitFor(func() bool { return rev() == csSnapshot(t, 1).Revision })
	mu.Lock()
	next = 2
	mu.Unlock()
	wake.Notify()
	h.waitFor(func() bool { return rev() == csSnapshot(t, 2).Revision })
	mu.Lock()
	fail, next = true, 3
	failed := builds + 1
	mu.Unlock()
	wake.Notify()
	h.waitFor(func() bool { mu.Lock(); defer mu.Unlock(); return builds >= failed })
	mu.Lock()
	fail, next = false, 4
	mu.Unlock()
	wake.Notify()
	h.waitFor(func() bool { return rev() == csSnapshot(t, 4).Revision })
	// The loop builds one at a time: the build after the failed one saw what the failure left.
	mu.Lock()
	after := servedAtBuild[failed]
	mu.Unlock()
	if after != csSnapshot(t, 2).Revision {
		t.Fatalf("after a failed build %q was served, want the previous snapshot", after)
	}
	cancel()
	wg.Wait()
}

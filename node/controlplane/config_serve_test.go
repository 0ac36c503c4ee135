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
	"github.com/queryflux/queryflux/sim"
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
	return newCSHarnessOn(t, poll, registry.NewMemory())
}

// newCSHarnessOn is newCSHarness's control plane on the registry store reg.
func newCSHarnessOn(t *testing.T, poll time.Duration, reg registry.Store) *csHarness {
	t.Helper()
	return newCSHarnessWith(t, poll, reg, env.Real(nil), Config{})
}

// newCSHarnessWith is newCSHarnessOn's control plane on e, configured by cfg but for the
// secrets and timeouts.
func newCSHarnessWith(t *testing.T, poll time.Duration, reg registry.Store, e env.Env, cfg Config) *csHarness {
	t.Helper()
	cfg.WorkerSecret, cfg.AdminToken, cfg.AllowShortTimeouts = csSecret, csAdminToken, true
	cp := New(e, cfg, reg)
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
	answer := h.parkPoll(s1.Revision)
	changes := 0
	h.srv.OnChange(func(string) { changes++ })
	seq := h.srv.changed.Seq()
	_ = h.srv.Publish(s1) // same revision: must not wake the poll (Publish notifies before it returns)
	if h.srv.changed.Seq() != seq || changes != 0 {
		t.Fatal("republishing the current revision woke the long-polls")
	}
	start := time.Now()
	_ = h.srv.Publish(s2)
	code, body := answer()
	if code != 200 || !strings.Contains(body, s2.Revision) {
		t.Fatalf("woken poll: %d %s", code, body)
	}
	if time.Since(start) > 30*time.Second { // half the poll timeout: a margin for a loaded machine
		t.Fatal("the poll was not woken by Publish")
	}
}

// parkPoll starts a long-poll for a revision newer than have and returns once it is parked;
// answer waits for its answer.
func (h *csHarness) parkPoll(have string) (answer func() (int, string)) {
	h.t.Helper()
	var wg sync.WaitGroup
	var code int
	var body string
	wg.Add(1)
	h.e.Go(context.Background(), "long-poll", func(context.Context) {
		defer wg.Done()
		code, body = h.get(snapshot.PathConfigWait+"?revision="+have, h.token, nil, "", "")
	})
	h.waitFor(func() bool { return h.srv.Waiting() == 1 })
	return func() (int, string) {
		wg.Wait()
		return code, body
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

// TestConfigWaitRefusesABadTimeout: a long-poll asking for a wait that is not a whole number of
// seconds from 1 to ConfigPollTimeoutMax is refused with 400 naming timeoutSecs; so is one so
// large that it overflowed into an immediate answer. What workers send (their pollTimeoutSecs,
// validated to 1..300) is served.
func TestConfigWaitRefusesABadTimeout(t *testing.T) {
	h := newCSHarness(t, time.Minute)
	s1 := csSnapshot(t, 1)
	_ = h.srv.Publish(s1)
	for _, v := range []string{"0", "-1", "zero", "1.5", "301", "86400", "9223372036854775807", "99999999999999999999"} {
		code, body := h.get(snapshot.PathConfigWait+"?revision=old&timeoutSecs="+v, h.token, nil, "", "")
		var e workerapi.ErrorBody
		if err := json.Unmarshal([]byte(body), &e); code != http.StatusBadRequest || err != nil || e.Field != "timeoutSecs" || !strings.Contains(e.Error, "timeoutSecs") {
			t.Errorf("timeoutSecs=%s: %d %s, want 400 naming timeoutSecs", v, code, body)
		}
	}
	for _, v := range []string{"1", "30", "300"} {
		if code, body := h.get(snapshot.PathConfigWait+"?revision=old&timeoutSecs="+v, h.token, nil, "", ""); code != http.StatusOK {
			t.Errorf("timeoutSecs=%s: %d %s, want the snapshot", v, code, body)
		}
	}
}

// TestConfigWaitBeforeAnyPublish: a long-poll before anything is published waits; it answers
// the first snapshot as soon as it is published, and 503 if its wait passes first.
func TestConfigWaitBeforeAnyPublish(t *testing.T) {
	h := newCSHarness(t, 50*time.Millisecond)
	if code, body := h.get(snapshot.PathConfigWait+"?revision=", h.token, nil, "", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("wait passed before any publish: %d %s, want 503", code, body)
	}
	h = newCSHarness(t, time.Minute)
	answer := h.parkPoll("")
	s1 := csSnapshot(t, 1)
	_ = h.srv.Publish(s1)
	if code, body := answer(); code != http.StatusOK || !strings.Contains(body, s1.Revision) {
		t.Fatalf("the first publish during the wait: %d %s, want its snapshot", code, body)
	}
}

// TestConfigNotModifiedNamesTheCurrentRevision: a 304, from GET /worker/config with
// If-None-Match or from a long-poll that timed out, carries the ETag of the revision served
// (the one a 200 names), so that a worker or cache can tell what it confirmed.
func TestConfigNotModifiedNamesTheCurrentRevision(t *testing.T) {
	h := newCSHarness(t, 50*time.Millisecond)
	s1 := csSnapshot(t, 1)
	_ = h.srv.Publish(s1)
	code, hdr, _ := h.do(snapshot.PathConfig, h.token, nil, "", "")
	etag := hdr.Get("ETag")
	if code != http.StatusOK || etag != snapshot.ETag(s1.Revision) {
		t.Fatalf("GET: %d, ETag %q", code, etag)
	}
	code, hdr, _ = h.do(snapshot.PathConfig, h.token, http.Header{"If-None-Match": {etag}}, "", "")
	if code != http.StatusNotModified || hdr.Get("ETag") != etag {
		t.Fatalf("If-None-Match: %d, ETag %q; want 304 with %q", code, hdr.Get("ETag"), etag)
	}
	code, hdr, _ = h.do(snapshot.PathConfigWait+"?revision="+s1.Revision, h.token, nil, "", "")
	if code != http.StatusNotModified || hdr.Get("ETag") != etag {
		t.Fatalf("long-poll timed out: %d, ETag %q; want 304 with %q", code, hdr.Get("ETag"), etag)
	}
}

// refreshWorld runs RunConfigRefresh with src and buildTimeout on a simulated control plane
// for a minute, with no wake at all, and stops it there. It returns the server and what
// RunConfigRefresh returned.
func refreshWorld(t *testing.T, src func(e env.Env, s *sim.Sim) ConfigSource, buildTimeout time.Duration) (*ConfigServer, error) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: 1})
	defer s.Close()
	n := s.AddNode("cp", nil)
	e := n.Env()
	srv := NewConfigServer(e, time.Minute)
	ret := errors.New("RunConfigRefresh did not return")
	s.Spawn(n, "refresh", func() {
		// The env's context: the simulator refuses a stdlib one (context.WithCancel cancels on a
		// goroutine of its own).
		ctx, cancel := e.WithCancel(n.Ctx())
		e.Go(n.Ctx(), "stop", func(ctx context.Context) {
			if e.Sleep(ctx, time.Minute) == nil {
				cancel()
			}
		})
		ret = srv.RunConfigRefresh(ctx, src(e, s), e.NewSignal(), buildTimeout)
	})
	if err := s.Run(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	return srv, ret
}

// TestRunConfigRefreshRetriesWithoutAWake: a build that fails is tried again
// ConfigRetryInterval later although nothing wakes the loop, until one builds; that one is
// published, and then the loop waits for a wake (none comes: no more builds).
func TestRunConfigRefreshRetriesWithoutAWake(t *testing.T) {
	snap := csSnapshot(t, 1)
	var builds []time.Duration
	srv, ret := refreshWorld(t, func(e env.Env, s *sim.Sim) ConfigSource {
		return func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
			builds = append(builds, s.Elapsed())
			if len(builds) < 3 {
				return nil, errors.New("store down")
			}
			return snap, nil
		}
	}, time.Second)
	if want := []time.Duration{0, ConfigRetryInterval, 2 * ConfigRetryInterval}; fmt.Sprint(builds) != fmt.Sprint(want) {
		t.Fatalf("builds at %v, want %v", builds, want)
	}
	if cur := srv.Current(); cur == nil || cur.Revision != snap.Revision {
		t.Fatalf("served %v after the retries, want %s", cur, snap.Revision)
	}
	if !errors.Is(ret, context.Canceled) {
		t.Fatalf("RunConfigRefresh returned %v, want context.Canceled", ret)
	}
}

// TestRunConfigRefreshDefaultBuildTimeout: with no build timeout given, a build that hangs is
// given up after ConfigBuildTimeoutDefault (its context's deadline), and tried again
// ConfigRetryInterval later.
func TestRunConfigRefreshDefaultBuildTimeout(t *testing.T) {
	snap := csSnapshot(t, 1)
	var builds, deadlines, ends []time.Duration
	srv, _ := refreshWorld(t, func(e env.Env, s *sim.Sim) ConfigSource {
		return func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
			builds = append(builds, s.Elapsed())
			if d, ok := ctx.Deadline(); ok {
				deadlines = append(deadlines, d.Sub(e.Now()))
			}
			if len(builds) > 1 {
				return snap, nil
			}
			// A hung store that honours ctx. (Blocking on <-ctx.Done() instead would hang the
			// whole simulation: the deadline is a virtual timer that fires only while every
			// task is parked in the env.)
			err := e.Sleep(ctx, time.Hour)
			ends = append(ends, s.Elapsed())
			return nil, err
		}
	}, 0)
	want := []time.Duration{0, ConfigBuildTimeoutDefault + ConfigRetryInterval}
	if fmt.Sprint(builds) != fmt.Sprint(want) || fmt.Sprint(ends) != fmt.Sprint([]time.Duration{ConfigBuildTimeoutDefault}) {
		t.Fatalf("builds at %v (the hung one ended at %v), want %v (ended at %v)", builds, ends, want, ConfigBuildTimeoutDefault)
	}
	if len(deadlines) != 2 || deadlines[0] != ConfigBuildTimeoutDefault || deadlines[1] != ConfigBuildTimeoutDefault {
		t.Fatalf("build deadlines %v from their start, want %v each", deadlines, ConfigBuildTimeoutDefault)
	}
	if cur := srv.Current(); cur == nil || cur.Revision != snap.Revision {
		t.Fatalf("served %v, want %s", cur, snap.Revision)
	}
}

package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

const csSecret = "config-sync-secret-321"

// countingTransport counts the config requests a worker makes.
type countingTransport struct {
	next  http.RoundTripper
	polls atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, snapshot.PathConfig) {
		c.polls.Add(1)
	}
	return c.next.RoundTrip(r)
}

type csFleet struct {
	t       *testing.T
	e       env.Env
	ctx     context.Context
	cp      *controlplane.ControlPlane
	srv     *controlplane.ConfigServer
	counter *countingTransport
	worker  *Worker
	logs    *logbuf.Buffer // what the worker logged
}

func newCSFleet(t *testing.T, poll time.Duration) *csFleet {
	t.Helper()
	logs := &logbuf.Buffer{}
	e := env.Real(slog.New(slog.NewTextHandler(logs, nil)))
	ctx, cancel := e.WithCancel(context.Background())
	t.Cleanup(cancel)
	cp := controlplane.New(e, controlplane.Config{WorkerSecret: csSecret, AllowShortTimeouts: true}, registry.NewMemory())
	srv := controlplane.NewConfigServer(e, poll)
	srv.Mount(cp)
	hs := httptest.NewServer(cp.Handler())
	t.Cleanup(hs.Close)
	counter := &countingTransport{next: http.DefaultTransport}
	w := New(e, Config{ControlPlaneURL: hs.URL, Secret: csSecret, Name: "w1"}, &http.Client{Transport: counter})
	return &csFleet{t: t, e: e, ctx: ctx, cp: cp, srv: srv, counter: counter, worker: w, logs: logs}
}

// start runs sync.Run as a task and waits for it to end at cleanup.
func (f *csFleet) start(s *ConfigSync) {
	ctx, cancel := f.e.WithCancel(f.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	f.e.Go(ctx, "config-sync", func(ctx context.Context) {
		defer wg.Done()
		if err := s.Run(ctx); !errors.Is(err, context.Canceled) {
			f.t.Errorf("Run returned %v", err)
		}
	})
	f.t.Cleanup(func() { cancel(); wg.Wait() })
}

func (f *csFleet) waitActive(s *ConfigSync, notRev string) *snapshot.WorkerSnapshotV1 {
	f.t.Helper()
	ctx, cancel := f.e.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	if err := s.WaitActive(ctx, notRev); err != nil {
		f.t.Fatalf("no new configuration (not %q): %v", notRev, err)
	}
	_, snap := s.Active()
	return snap
}

func csSnap(t *testing.T, maxRunning int) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, `
clusters: [{name: c, engine: sim, maxRunningQueries: %d, credentials: {password: cluster-pw}}]
clusterGroups: [{name: g, members: [c]}]
routingFallback: g
`, maxRunning))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Build(cfg, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// invalidSnap is a well-formed snapshot whose configuration does not compile (the fallback
// names no group): what a control plane with other compilers, or a bug, could serve.
func invalidSnap(t *testing.T) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	s := csSnap(t, 1)
	s.RoutingFallback = "nowhere"
	rev, err := snapshot.Revision(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Revision = rev
	return s
}

func TestConfigSyncFollowsTheControlPlane(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	var applied []int
	var mu sync.Mutex
	sync := NewConfigSync(f.worker, ConfigSyncOptions{
		Apply: func(_ context.Context, cfg *config.Config, _ *snapshot.WorkerSnapshotV1) error {
			mu.Lock()
			defer mu.Unlock()
			applied = append(applied, cfg.Clusters[0].MaxRunningQueries)
			return nil
		},
	})
	s1, s2 := csSnap(t, 1), csSnap(t, 2)
	if err := f.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	f.start(sync)
	if got := f.waitActive(sync, ""); got.Revision != s1.Revision {
		t.Fatalf("active %s, want %s", got.Revision, s1.Revision)
	}
	cfg, _ := sync.Active()
	if cfg.Clusters[0].Credentials.Password.Reveal() != "cluster-pw" {
		t.Fatal("the worker's config lost the embedded credentials")
	}
	// The next revision arrives through the long-poll, not a timer: the poll timeout is a minute.
	start := time.Now()
	if err := f.srv.Publish(s2); err != nil {
		t.Fatal(err)
	}
	if got := f.waitActive(sync, s1.Revision); got.Revision != s2.Revision {
		t.Fatalf("active %s, want %s", got.Revision, s2.Revision)
	}
	if time.Since(start) > 30*time.Second { // half the poll timeout: a margin for a loaded machine
		t.Fatal("the new revision was not pushed through the long-poll")
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(applied) != "[1 2]" {
		t.Fatalf("applied %v", applied)
	}
	var hb workerapi.Heartbeat
	sync.contribute(&hb)
	if hb.Revision.Active != s2.Revision || hb.Revision.LastSeen != s2.Revision || hb.Config.Source != "controlPlane" {
		t.Fatalf("heartbeat fields %+v", hb)
	}
}

// TestConfigSyncRejectsABadRevision: a revision that does not compile, or whose Apply fails,
// leaves the previous configuration in force, is remembered, and is not fetched again and again.
func TestConfigSyncRejectsABadRevision(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{
		Apply: func(_ context.Context, cfg *config.Config, _ *snapshot.WorkerSnapshotV1) error {
			if cfg.Clusters[0].MaxRunningQueries == 13 {
				return errors.New("engine refused")
			}
			return nil
		},
	})
	good := csSnap(t, 1)
	_ = f.srv.Publish(good)
	f.start(sync)
	f.waitActive(sync, "")

	for _, bad := range []*snapshot.WorkerSnapshotV1{invalidSnap(t), csSnap(t, 13)} {
		_ = f.srv.Publish(bad)
		deadline := time.Now().Add(10 * time.Second)
		for rev, _ := sync.Rejected(); rev != bad.Revision; rev, _ = sync.Rejected() {
			if time.Now().After(deadline) {
				t.Fatalf("revision %s never rejected", bad.Revision)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, snap := sync.Active(); snap.Revision != good.Revision {
			t.Fatalf("a rejected revision replaced the active one")
		}
		polls := f.counter.polls.Load()
		time.Sleep(200 * time.Millisecond)
		if n := f.counter.polls.Load() - polls; n > 1 {
			t.Fatalf("%d polls in 200ms after a rejection: the worker keeps refetching the bad revision", n)
		}
	}
	_, why := sync.Rejected()
	if why == nil || !strings.Contains(why.Error(), "engine refused") {
		t.Fatalf("rejection reason %v", why)
	}
	// An operator finds each rejection, with its revision, in the worker's log.
	for _, bad := range []string{invalidSnap(t).Revision, csSnap(t, 13).Revision} {
		if !strings.Contains(f.logs.String(), "config revision rejected") || !strings.Contains(f.logs.String(), "revision="+bad) {
			t.Fatalf("the rejection of %s is not logged:\n%s", bad, f.logs.String())
		}
	}
	fixed := csSnap(t, 4)
	_ = f.srv.Publish(fixed)
	if got := f.waitActive(sync, good.Revision); got.Revision != fixed.Revision {
		t.Fatalf("active %s, want the fixed %s", got.Revision, fixed.Revision)
	}
}

// TestConfigSyncBacksOff: while the control plane has nothing to serve, the worker retries with
// a bounded, growing backoff, reports the failures in its heartbeat, and recovers.
func TestConfigSyncBacksOff(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{BackoffMin: 10 * time.Millisecond, BackoffMax: 80 * time.Millisecond})
	start := time.Now()
	f.start(sync)
	f.waitFor(func() bool { return f.counter.polls.Load() >= 6 })
	// Six polls wait at least 10+20+40+80+80 ms between them, less the jitter (0.8 of each):
	// without a growing backoff they would come within a few milliseconds.
	if took := time.Since(start); took < 184*time.Millisecond {
		t.Fatalf("six polls within %v: the backoff does not grow from 10ms to 80ms", took)
	}
	var hb workerapi.Heartbeat
	sync.contribute(&hb)
	if hb.Config.ConsecutiveSyncFailures < 3 || hb.Config.SyncFailures < hb.Config.ConsecutiveSyncFailures ||
		!strings.Contains(hb.Config.LastSyncError, "503") {
		t.Fatalf("heartbeat config status %+v", hb.Config)
	}
	if strings.Contains(hb.Config.LastSyncError, csSecret) {
		t.Fatal("the heartbeat shows the worker secret")
	}
	if logs := f.logs.String(); !strings.Contains(logs, "config sync failed") || !strings.Contains(logs, "503") || strings.Contains(logs, csSecret) {
		t.Fatalf("the failed polls are not logged with their answer (or the log shows the secret):\n%s", logs)
	}
	_ = f.srv.Publish(csSnap(t, 1))
	f.waitActive(sync, "")
	sync.contribute(&hb)
	if hb.Config.ConsecutiveSyncFailures != 0 || hb.Config.LastSyncError != "" {
		t.Fatalf("failures not reset after recovery: %+v", hb.Config)
	}
	if hb.Config.SyncFailures < 3 {
		t.Fatalf("the failed polls' total forgotten after recovery: %+v", hb.Config)
	}
}

// TestNewRevisionIsToldToTheControlPlaneAtOnce: a worker that activates a revision says so in a
// heartbeat at once, not at its next routine one (10 s away here, the control plane's default):
// the control plane's view of which revision each worker runs follows a rollout as it happens.
func TestNewRevisionIsToldToTheControlPlaneAtOnce(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{})
	f.worker.Start(f.ctx)
	f.waitFor(func() bool { return f.worker.Status().LastHeartbeatAckAt.After(time.Time{}) })
	snap := csSnap(t, 1)
	_ = f.srv.Publish(snap)
	f.start(sync)
	f.waitActive(sync, "")
	// Well within the routine beat's 9-11 s.
	for deadline := time.Now().Add(4 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if wi, _ := f.cp.Worker("w1"); wi.Revision == snap.Revision {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("4 s after the revision became active, the control plane has not heard of it")
		}
	}
}

// TestRejectedRevisionLeavesTheRunningOneUnconfirmed: while the control plane serves a
// revision this worker refused, its answers that nothing changed vouch for that revision, not
// for the older one the worker still runs: the heartbeat's staleness of the running revision
// grows, and what the worker lends peers keeps the older confirmation.
func TestRejectedRevisionLeavesTheRunningOneUnconfirmed(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second})
	_ = f.srv.Publish(csSnap(t, 1))
	f.start(sync)
	f.waitActive(sync, "")
	bad := invalidSnap(t)
	_ = f.srv.Publish(bad)
	f.waitFor(func() bool { rev, _ := sync.Rejected(); return rev == bad.Revision })
	sync.mu.Lock()
	proof := sync.proof
	sync.mu.Unlock()
	time.Sleep(2500 * time.Millisecond) // two long-polls answered "nothing newer than the refused one"
	var hb workerapi.Heartbeat
	sync.contribute(&hb)
	sync.mu.Lock()
	after := sync.proof
	sync.mu.Unlock()
	if hb.Config.StalenessSecs < 2 || after != proof {
		t.Fatalf("2.5 s after a refused revision, the running one's staleness is %.2f s and its confirmation %v (was %v): want at least 2 s, unchanged",
			hb.Config.StalenessSecs, after, proof)
	}
}

// TestConfigSyncBackoffDoublesFromItsMinimum: the n-th failed poll in a row waits BackoffMin
// doubled n-1 times (within the jitter, ±20%), never more than BackoffMax; a success starts it
// over.
func TestConfigSyncBackoffDoublesFromItsMinimum(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{BackoffMin: 100 * time.Millisecond, BackoffMax: 1 * time.Second})
	within := func(n int, got, want time.Duration) {
		t.Helper()
		if got < want*8/10 || got > want*12/10 {
			t.Fatalf("failure %d in a row: backoff %v, want %v ±20%%", n, got, want)
		}
	}
	fail := errors.New("poll failed")
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		within(n+1, sync.recordFailure(fail), want*time.Millisecond)
	}
	sync.succeeded()
	within(1, sync.recordFailure(fail), 100*time.Millisecond)
}

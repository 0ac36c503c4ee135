package worker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// configExchange is one config request a worker made and the status it got.
type configExchange struct {
	path, ifNoneMatch string
	status            int
}

// recordingTransport records the worker's config requests.
type recordingTransport struct {
	mu   sync.Mutex
	seen []configExchange
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if strings.HasPrefix(req.URL.Path, snapshot.PathConfig) {
		x := configExchange{path: req.URL.RequestURI(), ifNoneMatch: req.Header.Get("If-None-Match")}
		if err == nil {
			x.status = resp.StatusCode
		}
		r.mu.Lock()
		r.seen = append(r.seen, x)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recordingTransport) exchanges() []configExchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]configExchange(nil), r.seen...)
}

// recordedFleet is newCSFleet with the worker's config requests recorded.
func recordedFleet(t *testing.T) (*csFleet, *recordingTransport) {
	f := newCSFleet(t, time.Minute)
	rec := &recordingTransport{}
	f.worker = New(f.e, Config{ControlPlaneURL: f.worker.cfg.ControlPlaneURL, Secret: csSecret, Name: "w1"}, &http.Client{Transport: rec})
	return f, rec
}

// TestConfigSyncWaitsOnTheControlPlane: once a worker has its configuration, and nothing
// changes, it asks the control plane again only by long-polls for the next revision, each held
// for its poll timeout: a worker that asked plainly would fetch the same snapshot in a loop,
// and a fleet of them would keep the control plane busy for nothing.
func TestConfigSyncWaitsOnTheControlPlane(t *testing.T) {
	f, rec := recordedFleet(t)
	s1 := csSnap(t, 1)
	if err := f.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second})
	f.start(sync)
	f.waitActive(sync, "")
	time.Sleep(3 * time.Second)
	got := rec.exchanges()
	// 3 s of one-second long-polls is about 4 requests in all; a loop would be hundreds.
	if len(got) > 8 {
		t.Fatalf("%d config requests in 3 s with nothing new: %+v", len(got), got[:8])
	}
	if len(got) < 2 {
		t.Fatalf("no long-poll after the first answer: %+v", got)
	}
	if got[0].path != snapshot.PathConfig || got[0].status != http.StatusOK {
		t.Fatalf("first request %+v, want a plain GET answered 200", got[0])
	}
	for _, x := range got[1:] {
		if !strings.HasPrefix(x.path, snapshot.PathConfigWait+"?") || !strings.Contains(x.path, "revision="+s1.Revision) {
			t.Fatalf("after the first answer a request was %+v, want a long-poll past %s", x, s1.Revision)
		}
	}
}

// TestConfigSyncConfirmsASeededRevision: a worker that starts from a copy (a peer's, its own
// saved one) asks the control plane whether that revision is current with If-None-Match, is
// answered 304 without the snapshot, and then counts the copy as the control plane's.
func TestConfigSyncConfirmsASeededRevision(t *testing.T) {
	f, rec := recordedFleet(t)
	s1 := csSnap(t, 1)
	if err := f.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	var applied atomic.Int64
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second, Apply: func(context.Context, *config.Config, *snapshot.WorkerSnapshotV1) error {
		applied.Add(1)
		return nil
	}})
	if err := sync.Seed(f.ctx, s1, "peer", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	var hb workerapi.Heartbeat
	sync.contribute(&hb)
	if !hb.Config.Stale || hb.Config.Source != "peer" {
		t.Fatalf("a peer's copy before the control plane answered: %+v", hb.Config)
	}
	f.start(sync)
	f.waitFor(func() bool { return len(rec.exchanges()) >= 2 })
	first := rec.exchanges()[0]
	if first.path != snapshot.PathConfig || first.ifNoneMatch != snapshot.ETag(s1.Revision) || first.status != http.StatusNotModified {
		t.Fatalf("first request %+v, want a GET with If-None-Match %s answered 304", first, snapshot.ETag(s1.Revision))
	}
	hb = workerapi.Heartbeat{}
	sync.contribute(&hb)
	if hb.Config.Stale || hb.Config.Source != "controlPlane" || hb.Config.StalenessSecs > 60 {
		t.Fatalf("after the 304 the copy is not the control plane's: %+v", hb.Config)
	}
	if n := applied.Load(); n != 1 {
		t.Fatalf("the seeded revision was applied %d times, want once", n)
	}
}

// TestNoConfigurationNotReady: a worker is not ready (it could only fail its clients) until a
// configuration is active.
func TestNoConfigurationNotReady(t *testing.T) {
	f, _ := recordedFleet(t)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second, BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	ops := httptest.NewServer(f.worker.OpsHandler())
	defer ops.Close()
	f.start(sync)
	if code, body := readyz(t, ops.URL); code != http.StatusServiceUnavailable || !strings.Contains(body, "no configuration yet") {
		t.Fatalf("with no configuration: %d %s", code, body)
	}
	if err := f.srv.Publish(csSnap(t, 1)); err != nil {
		t.Fatal(err)
	}
	f.waitActive(sync, "")
	if _, body := readyz(t, ops.URL); strings.Contains(body, "no configuration") {
		t.Fatalf("with a configuration active: %s", body)
	}
}

// TestWaitActiveEndsWithItsContext: a caller waiting for a configuration that never comes
// gets its context's error, not a nil that says one is active.
func TestWaitActiveEndsWithItsContext(t *testing.T) {
	f, _ := recordedFleet(t)
	sync := NewConfigSync(f.worker, ConfigSyncOptions{})
	ctx, cancel := context.WithTimeout(f.ctx, 50*time.Millisecond)
	defer cancel()
	if err := sync.WaitActive(ctx, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitActive with no configuration: %v", err)
	}
}

// TestConfigSyncOptionDefaults: unset (or negative) options take their defaults, and a backoff
// ceiling under the floor is raised.
func TestConfigSyncOptionDefaults(t *testing.T) {
	f, _ := recordedFleet(t)
	for _, c := range []struct {
		in   ConfigSyncOptions
		want [3]time.Duration
	}{
		{ConfigSyncOptions{}, [3]time.Duration{ConfigPollTimeoutDefault, ConfigBackoffMinDefault, ConfigBackoffMaxDefault}},
		{ConfigSyncOptions{PollTimeout: -1, BackoffMin: -1, BackoffMax: -1}, [3]time.Duration{ConfigPollTimeoutDefault, ConfigBackoffMinDefault, ConfigBackoffMaxDefault}},
		{ConfigSyncOptions{PollTimeout: 1, BackoffMin: 2, BackoffMax: 2}, [3]time.Duration{1, 2, 2}},
		{ConfigSyncOptions{BackoffMin: time.Hour, BackoffMax: time.Second}, [3]time.Duration{ConfigPollTimeoutDefault, time.Hour, time.Hour}},
	} {
		o := NewConfigSync(f.worker, c.in).opts
		if got := [3]time.Duration{o.PollTimeout, o.BackoffMin, o.BackoffMax}; got != c.want {
			t.Errorf("%+v: poll, backoff min, max = %v, want %v", c.in, got, c.want)
		}
	}
}

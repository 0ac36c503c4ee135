package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
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

// recordingTransport records the worker's config requests; fake, when set, answers them in the
// control plane's place (registration and heartbeats still reach the real one).
type recordingTransport struct {
	mu   sync.Mutex
	seen []configExchange
	fake func(*http.Request) *http.Response
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	isConfig := strings.HasPrefix(req.URL.Path, snapshot.PathConfig)
	var resp *http.Response
	var err error
	if r.fake != nil && isConfig {
		resp = r.fake(req)
		resp.Request = req
	} else {
		resp, err = http.DefaultTransport.RoundTrip(req)
	}
	if isConfig {
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

// recordedFleet is newCSFleet with the worker's config requests recorded (and answered by fake,
// if not nil).
func recordedFleet(t *testing.T, fake func(*http.Request) *http.Response) (*csFleet, *recordingTransport) {
	f := newCSFleet(t, time.Minute)
	rec := &recordingTransport{fake: fake}
	f.worker = New(f.e, Config{ControlPlaneURL: f.worker.cfg.ControlPlaneURL, Secret: csSecret, Name: "w1"}, &http.Client{Transport: rec})
	return f, rec
}

// TestConfigSyncWaitsOnTheControlPlane: once a worker has its configuration, and nothing
// changes, it asks the control plane again only by long-polls for the next revision, each held
// for its poll timeout: a worker that asked plainly would fetch the same snapshot in a loop,
// and a fleet of them would keep the control plane busy for nothing.
func TestConfigSyncWaitsOnTheControlPlane(t *testing.T) {
	f, rec := recordedFleet(t, nil)
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
		if !strings.HasPrefix(x.path, snapshot.PathConfigWait+"?") || !strings.Contains(x.path, "revision="+s1.Revision) || x.ifNoneMatch != "" {
			t.Fatalf("after the first answer a request was %+v, want a long-poll past %s", x, s1.Revision)
		}
	}
	var hb workerapi.Heartbeat
	sync.contribute(&hb)
	if hb.Config.LastSyncAttemptAt.IsZero() || hb.Config.LastSyncAt.IsZero() {
		t.Fatalf("the heartbeat does not say when the worker last asked: %+v", hb.Config)
	}
}

// TestConfigSyncConfirmsASeededRevision: a worker that starts from a copy (a peer's, its own
// saved one) asks the control plane whether that revision is current with If-None-Match, is
// answered 304 without the snapshot, and then counts the copy as the control plane's.
func TestConfigSyncConfirmsASeededRevision(t *testing.T) {
	f, rec := recordedFleet(t, nil)
	s1 := csSnap(t, 1)
	if err := f.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	var applied atomic.Int64
	// Long-polls held for 30 s: the confirmation must come from the 304 itself.
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: 30 * time.Second, Apply: func(context.Context, *config.Config, *snapshot.WorkerSnapshotV1) error {
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
	f.waitFor(func() bool {
		hb = workerapi.Heartbeat{}
		sync.contribute(&hb)
		return hb.Config.Source == "controlPlane"
	})
	if hb.Config.Stale || hb.Config.StalenessSecs > 60 {
		t.Fatalf("after the 304 the copy is not the control plane's: %+v", hb.Config)
	}
	f.waitFor(func() bool { return len(rec.exchanges()) >= 1 })
	first := rec.exchanges()[0]
	if first.path != snapshot.PathConfig || first.ifNoneMatch != snapshot.ETag(s1.Revision) || first.status != http.StatusNotModified {
		t.Fatalf("first request %+v, want a GET with If-None-Match %s answered 304", first, snapshot.ETag(s1.Revision))
	}
	time.Sleep(500 * time.Millisecond)
	if got := rec.exchanges(); len(got) != 1 {
		t.Fatalf("after the 304 the worker asked again at once, not by a held long-poll: %+v", got)
	}
	if n := applied.Load(); n != 1 {
		t.Fatalf("the seeded revision was applied %d times, want once", n)
	}
}

// TestNoConfigurationNotReady: a worker is not ready (it could only fail its clients) until a
// configuration is active.
func TestNoConfigurationNotReady(t *testing.T) {
	f, _ := recordedFleet(t, nil)
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
	f, _ := recordedFleet(t, nil)
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
	f, _ := recordedFleet(t, nil)
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

// answer is a fake control plane's config answer.
func answer(status int, body []byte, header http.Header) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

func snapBody(t *testing.T, s *snapshot.WorkerSnapshotV1) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConfigSyncRefusesABrokenAnswer: a control plane's answer that is cut short, too large or
// not a snapshot installs nothing and counts as a failed poll, named in the heartbeat.
func TestConfigSyncRefusesABrokenAnswer(t *testing.T) {
	for _, c := range []struct {
		name, want string
		answer     func() *http.Response
	}{
		{"cut short", "reading snapshot", func() *http.Response {
			// What net/http's body gives when the connection ends before Content-Length.
			r := answer(http.StatusOK, nil, nil)
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"revision":`), iotest.ErrReader(io.ErrUnexpectedEOF)))
			r.ContentLength = 1000
			return r
		}},
		{"too large", "snapshot larger than", func() *http.Response {
			r := answer(http.StatusOK, nil, nil)
			r.Body, r.ContentLength = io.NopCloser(io.LimitReader(zeros{}, configBodyBytesMax+1)), -1
			return r
		}},
		{"not a snapshot", "", func() *http.Response { return answer(http.StatusOK, []byte(`{"revision": 7}`), nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, rec := recordedFleet(t, func(*http.Request) *http.Response { return c.answer() })
			sync := NewConfigSync(f.worker, ConfigSyncOptions{BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
			f.start(sync)
			var hb workerapi.Heartbeat
			f.waitFor(func() bool { sync.contribute(&hb); return hb.Config.ConsecutiveSyncFailures > 0 })
			if hb.Config.ConsecutiveSyncFailures == 0 || hb.Config.LastSyncError == "" || !strings.Contains(hb.Config.LastSyncError, c.want) {
				t.Fatalf("heartbeat after %d broken answers: %+v, want a failure naming %q", len(rec.exchanges()), hb.Config, c.want)
			}
			if cfg, _ := sync.Active(); cfg != nil {
				t.Fatal("a broken answer installed a configuration")
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestConfigSyncKnowsTheRevisionsItHas: a control plane that answers every request with a whole
// snapshot (it ignores If-None-Match) confirms a seeded revision without applying it again,
// and a revision the worker refused is refused once, not compiled again at every answer.
func TestConfigSyncKnowsTheRevisionsItHas(t *testing.T) {
	t.Run("active", func(t *testing.T) {
		s1 := csSnap(t, 1)
		body := snapBody(t, s1)
		f, rec := recordedFleet(t, func(*http.Request) *http.Response { return answer(http.StatusOK, body, nil) })
		var applied atomic.Int64
		sync := NewConfigSync(f.worker, ConfigSyncOptions{Apply: func(context.Context, *config.Config, *snapshot.WorkerSnapshotV1) error {
			applied.Add(1)
			return nil
		}})
		if err := sync.Seed(f.ctx, s1, "peer", time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		f.start(sync)
		f.waitFor(func() bool { return len(rec.exchanges()) >= 3 })
		var hb workerapi.Heartbeat
		sync.contribute(&hb)
		if hb.Config.Source != "controlPlane" || hb.Config.StalenessSecs > 60 {
			t.Fatalf("the control plane's answer of the active revision did not confirm it: %+v", hb.Config)
		}
		if n := applied.Load(); n != 1 {
			t.Fatalf("the active revision was applied %d times, want once", n)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		body := snapBody(t, invalidSnap(t))
		f, rec := recordedFleet(t, func(*http.Request) *http.Response { return answer(http.StatusOK, body, nil) })
		var derived atomic.Int64
		sync := NewConfigSync(f.worker, ConfigSyncOptions{Derive: func(s *snapshot.WorkerSnapshotV1, local *config.QueryFlux) (*config.Config, error) {
			derived.Add(1)
			return DeriveConfig(s, local)
		}})
		f.start(sync)
		f.waitFor(func() bool { return len(rec.exchanges()) >= 4 })
		if n := derived.Load(); n != 1 {
			t.Fatalf("the refused revision was compiled %d times, want once", n)
		}
		if n := testutil.ToFloat64(sync.metrics.activateFailures); n != 1 {
			t.Fatalf("activation failures counted %v, want 1", n)
		}
	})
}

// TestConfirmationNeedsBothHeaders: a control plane's confirmation is its time and its proof
// together; either alone is none.
func TestConfirmationNeedsBothHeaders(t *testing.T) {
	for _, c := range []struct {
		at, proof string
		want      confirmation
	}{
		{"2026-12-06T10:00:00Z", "p", confirmation{at: "2026-12-06T10:00:00Z", proof: "p"}},
		{"2026-12-06T10:00:00Z", "", confirmation{}},
		{"", "p", confirmation{}},
	} {
		h := http.Header{}
		h.Set(snapshot.HeaderConfirmedAt, c.at)
		h.Set(snapshot.HeaderConfirmation, c.proof)
		if got := confirmationOf(h); got != c.want {
			t.Errorf("at %q proof %q: %+v, want %+v", c.at, c.proof, got, c.want)
		}
	}
}

// TestConfirmationTimeIsTheControlPlanes: a 304's confirmation time is the control plane's (a
// copy it last confirmed ten minutes ago is ten minutes stale), not the moment it arrived.
func TestConfirmationTimeIsTheControlPlanes(t *testing.T) {
	s1 := csSnap(t, 1)
	at := time.Now().Add(-10 * time.Minute).UTC()
	h := http.Header{}
	h.Set(snapshot.HeaderConfirmedAt, at.Format(time.RFC3339Nano))
	f, _ := recordedFleet(t, func(*http.Request) *http.Response { return answer(http.StatusNotModified, nil, h) })
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second})
	if err := sync.Seed(f.ctx, s1, "peer", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.start(sync)
	f.waitFor(func() bool { return sync.ConfirmedAt().After(at.Add(-time.Minute)) })
	if got := sync.ConfirmedAt(); !got.Equal(at) {
		t.Fatalf("confirmed at %v, want the control plane's %v", got, at)
	}
}

package worker

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// failingThenRealTransport answers a worker's first `fail` config requests 503 itself and passes
// every other request to the control plane; it counts the config answers' bodies left unclosed.
type failingThenRealTransport struct {
	mu       sync.Mutex
	fail     int
	unclosed int
}

type trackedBody struct {
	io.ReadCloser
	t    *failingThenRealTransport
	once sync.Once
}

func (b *trackedBody) Close() error {
	b.once.Do(func() { b.t.mu.Lock(); b.t.unclosed--; b.t.mu.Unlock() })
	return b.ReadCloser.Close()
}

func (t *failingThenRealTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, snapshot.PathConfig) {
		return http.DefaultTransport.RoundTrip(req)
	}
	t.mu.Lock()
	failNow := t.fail > 0
	if failNow {
		t.fail--
	}
	t.mu.Unlock()
	var resp *http.Response
	if failNow {
		resp = answer(http.StatusServiceUnavailable, []byte(`{"error":"no configuration published"}`), http.Header{"Content-Type": {"application/json"}})
		resp.Request = req
	} else {
		var err error
		if resp, err = http.DefaultTransport.RoundTrip(req); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	t.unclosed++
	t.mu.Unlock()
	resp.Body = &trackedBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

func (t *failingThenRealTransport) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unclosed
}

// TestA304EndsTheFailureStreak: a worker running a copy (a peer's) whose polls failed twice,
// then is answered 304 for that copy, reports no failure streak and no last error: the control
// plane answered. Each answer's body is closed (a long-poll left open holds its connection).
func TestA304EndsTheFailureStreak(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	s1 := csSnap(t, 1)
	if err := f.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	tr := &failingThenRealTransport{fail: 2}
	f.worker = New(f.e, Config{ControlPlaneURL: f.worker.cfg.ControlPlaneURL, Secret: csSecret, Name: "w1"}, &http.Client{Transport: tr})
	sync := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second})
	if err := sync.Seed(f.ctx, s1, "peer", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		err := sync.pollOnce(f.ctx)
		if err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("poll %d: %v, want the 503", i+1, err)
		}
		sync.recordFailure(err)
	}
	var hb workerapi.Heartbeat
	sync.contribute(&hb)
	if hb.Config.ConsecutiveSyncFailures != 2 || hb.Config.LastSyncError == "" {
		t.Fatalf("after two failed polls: %+v", hb.Config)
	}
	if err := sync.pollOnce(f.ctx); err != nil {
		t.Fatalf("the poll the control plane answers 304: %v", err)
	}
	hb = workerapi.Heartbeat{}
	sync.contribute(&hb)
	if hb.Config.ConsecutiveSyncFailures != 0 || hb.Config.LastSyncError != "" || hb.Config.SyncFailures != 2 {
		t.Fatalf("after the 304: %+v, want no streak, no last error, 2 failures in all", hb.Config)
	}
	if hb.Config.Source != "controlPlane" || hb.Config.Stale {
		t.Fatalf("after the 304 the copy is not the control plane's: %+v", hb.Config)
	}
	// A worker without a copy is answered 200 with the snapshot.
	plain := NewConfigSync(f.worker, ConfigSyncOptions{PollTimeout: time.Second})
	if err := plain.pollOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, snap := plain.Active(); snap == nil || snap.Revision != s1.Revision {
		t.Fatalf("the 200's snapshot not active: %v", snap)
	}
	if n := tr.open(); n != 0 {
		t.Fatalf("%d config answers' bodies left open (503, 503, 304, 200)", n)
	}
}

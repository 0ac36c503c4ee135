package worker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestPeerBootstrap: a worker whose control plane is down copies a recent snapshot from a peer,
// but not an old one, and not without the shared secret.
func TestPeerBootstrap(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	lender := NewConfigSync(f.worker, ConfigSyncOptions{})
	peer := httptest.NewServer(lender.PeerConfigHandler(csSecret))
	t.Cleanup(peer.Close)
	peerAddr := strings.TrimPrefix(peer.URL, "http://")

	// Peers must present the shared secret.
	resp, err := http.Get(peer.URL + PathPeerConfig)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the secret: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", peer.URL+PathPeerConfig, nil)
	req.Header.Set("Authorization", "Bearer "+csSecret)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with nothing to lend: %d, want 503", resp.StatusCode)
	}
	snap := csSnap(t, 3)
	_ = f.srv.Publish(snap)
	f.start(lender)
	f.waitActive(lender, "")

	// The borrower's control plane is down (a closed server).
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	borrowerWorker := New(f.e, Config{ControlPlaneURL: down.URL, Secret: csSecret, Name: "w2"}, &http.Client{})
	peers := &PeerOptions{Addresses: []string{"127.0.0.1:1", peerAddr}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}}

	old := NewConfigSync(borrowerWorker, ConfigSyncOptions{})
	tooOld := *peers
	tooOld.MaxAge = time.Nanosecond
	if err := old.BootstrapFromPeers(f.ctx, tooOld); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("a snapshot older than maxAge was accepted (err %v)", err)
	}
	wrong := *peers
	wrong.Secret = "not-the-secret"
	if err := old.BootstrapFromPeers(f.ctx, wrong); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a peer lent its snapshot without the secret (err %v)", err)
	}
	if cfg, _ := old.Active(); cfg != nil {
		t.Fatal("a refused bootstrap installed a configuration")
	}

	borrower := NewConfigSync(borrowerWorker, ConfigSyncOptions{Peers: peers, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	f.start(borrower)
	got := f.waitActive(borrower, "")
	if got.Revision != snap.Revision {
		t.Fatalf("borrowed revision %s, want %s", got.Revision, snap.Revision)
	}
	if age := f.e.Now().Sub(borrower.ConfirmedAt()); age < 0 || age > time.Minute {
		t.Fatalf("borrowed confirmation age %s", age)
	}
	cfg, _ := borrower.Active()
	if cfg.Clusters[0].MaxRunningQueries != 3 {
		t.Fatal("borrowed configuration differs")
	}
	var hb workerapi.Heartbeat
	borrower.contribute(&hb)
	if hb.Config.Source != "peer" || !hb.Config.Stale {
		t.Fatalf("source %q stale %v, want a stale peer copy", hb.Config.Source, hb.Config.Stale)
	}
	if st := borrowerWorker.Status(); st.Config.Source != "peer" || !st.Config.Stale {
		t.Fatalf("/worker/status config %+v: a peer copy must show stale", st.Config)
	}

	// What a lender answers is a snapshot, said so.
	req, _ = http.NewRequest("GET", peer.URL+PathPeerConfig, nil)
	workerapi.SetBearer(req, PeerToken(csSecret))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != snapshot.MediaType {
		t.Fatalf("a lent snapshot: %d, Content-Type %q; want 200, %q", resp.StatusCode, resp.Header.Get("Content-Type"), snapshot.MediaType)
	}
	// A worker running a configuration copies nothing (a peer's may be older).
	running := NewConfigSync(borrowerWorker, ConfigSyncOptions{})
	mine := csSnap(t, 5)
	if err := running.Seed(f.ctx, mine, "controlPlane", f.e.Now()); err != nil {
		t.Fatal(err)
	}
	if err := running.BootstrapFromPeers(f.ctx, *peers); err != nil {
		t.Fatalf("bootstrap of a worker running a configuration: %v", err)
	}
	if _, active := running.Active(); active.Revision != mine.Revision {
		t.Fatalf("a worker running %s bootstrapped %s from a peer", mine.Revision, active.Revision)
	}
	// An address that makes no URL is an error naming it, the other peers still asked.
	odd := *peers
	odd.Addresses = []string{"http://[not-a-host", peerAddr}
	if err := NewConfigSync(borrowerWorker, ConfigSyncOptions{}).BootstrapFromPeers(f.ctx, odd); err != nil {
		t.Fatalf("a bootstrap with one odd address and a good peer: %v", err)
	}
	odd.Addresses = []string{"http://[not-a-host"}
	if err := NewConfigSync(borrowerWorker, ConfigSyncOptions{}).BootstrapFromPeers(f.ctx, odd); err == nil || !strings.Contains(err.Error(), `peer http://[not-a-host: parse "http://[not-a-host`) {
		t.Fatalf("a bootstrap from an address that makes no URL: %v, want an error naming it and why", err)
	}
	// A copy this worker refuses is named in the error, with why.
	refusing := NewConfigSync(borrowerWorker, ConfigSyncOptions{Apply: func(context.Context, *config.Config, *snapshot.WorkerSnapshotV1) error {
		return errors.New("engine refused")
	}})
	if err := refusing.BootstrapFromPeers(f.ctx, *peers); err == nil || !strings.Contains(err.Error(), "peer "+peerAddr+": engine refused") ||
		!strings.Contains(err.Error(), "peer 127.0.0.1:1: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a refused copy and a peer that is not there: %v, want each peer and why", err)
	}
}

// TestPeerCopyIsConfirmedByTheControlPlane: once the control plane answers with the revision a
// worker copied from a peer, the control plane vouches for it and nothing is reinstalled.
func TestPeerCopyIsConfirmedByTheControlPlane(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	applied := 0
	cs := NewConfigSync(f.worker, ConfigSyncOptions{Apply: func(context.Context, *config.Config, *snapshot.WorkerSnapshotV1) error {
		applied++
		return nil
	}})
	snap := csSnap(t, 2)
	copiedAt := f.e.Now().Add(-time.Hour)
	if err := cs.Seed(f.ctx, snap, "peer", copiedAt); err != nil {
		t.Fatal(err)
	}
	// Checked before the sync starts: once started, its first poll may confirm the copy at once.
	if !cs.Stale() {
		t.Fatal("a seeded peer copy must be stale before the control plane confirms it")
	}
	_ = f.srv.Publish(snap)
	f.start(cs)
	f.waitFor(func() bool { return cs.ConfirmedAt().After(copiedAt) })
	if cs.Stale() {
		t.Fatal("still stale after the control plane confirmed the revision")
	}
	var hb workerapi.Heartbeat
	cs.contribute(&hb)
	if hb.Config.Source != "controlPlane" || hb.Config.Stale || hb.Config.StalenessSecs > 60 || applied != 1 {
		t.Fatalf("after confirmation: %+v, applied %d times", hb.Config, applied)
	}
}

func (f *csFleet) waitFor(cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatal("condition not reached")
		}
	}
}

// TestPeerTokenIsStableAcrossVersions: every worker of a fleet derives the same PeerToken from
// the secret, whatever its version (a rolling upgrade mixes them): the derivation is part of the
// peer protocol, pinned here. The token is not the secret and does not contain it.
func TestPeerTokenIsStableAcrossVersions(t *testing.T) {
	const secret = "the-shared-worker-secret"
	const want = "qfp_99e7f2b95aaeaa0ce10bdbb983b837ecb6e7f564802afbebe85aae16a3095a96" // HMAC-SHA256(secret, "queryflux peer config v1")
	if got := PeerToken(secret); got != want || strings.Contains(got, secret) {
		t.Fatalf("PeerToken = %q, want %q", got, want)
	}
	if PeerToken(secret+"x") == want {
		t.Fatal("another secret gives the same token")
	}
}

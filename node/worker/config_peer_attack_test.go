package worker

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
)

// fakePeer answers GET PathPeerConfig with body and the given confirmation headers, whatever it
// is sent, and remembers the Authorization header it was sent.
type fakePeer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newFakePeer(t *testing.T, body []byte, confirmedAt, proof string) *fakePeer {
	p := &fakePeer{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.mu.Unlock()
		w.Header().Set("Content-Type", snapshot.MediaType)
		w.Header().Set(snapshot.HeaderConfirmedAt, confirmedAt)
		if proof != "" {
			w.Header().Set(snapshot.HeaderConfirmation, proof)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(p.Close)
	return p
}

// confirmedBy is the confirmation a control plane keyed by secret gives snap at at.
func confirmedBy(t *testing.T, secret string, snap *snapshot.WorkerSnapshotV1, at time.Time) (string, string) {
	t.Helper()
	d, err := snapshot.DigestOf(snap)
	if err != nil {
		t.Fatal(err)
	}
	text := at.UTC().Format(time.RFC3339Nano)
	return text, snapshot.Confirm(secret, d, text)
}

func encoded(t *testing.T, snap *snapshot.WorkerSnapshotV1) []byte {
	t.Helper()
	b, err := snapshot.Encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPeerCannotForgeAgeOrSwapASnapshot: whoever answers at a peer's address while the control
// plane is down (a host that took the address over, a stale peerBootstrap entry, another
// fleet's worker) offers a snapshot of its making: an engine endpoint of its own, a cap
// changed. A fresh QueryFlux-Confirmed-At header is not enough: a copy is installed only
// with the control plane's confirmation of exactly its content (keyed by the worker secret),
// recent by that confirmation's own time, and the secret never leaves the worker.
func TestPeerCannotForgeAgeOrSwapASnapshot(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	now := f.e.Now()
	genuine := csSnap(t, 3)
	forged := csSnap(t, 3)
	forged.Clusters[0].Endpoint = "attacker.example:5432"
	forged.Revision, _ = snapshot.Revision(forged)
	freshAt := now.UTC().Format(time.RFC3339Nano)
	_, genuineProof := confirmedBy(t, csSecret, genuine, now)
	oldAt, oldProof := confirmedBy(t, csSecret, genuine, now.Add(-time.Hour))
	_, otherFleetProof := confirmedBy(t, "another-fleets-secret", forged, now)

	cases := []struct {
		name        string
		body        []byte
		at, proof   string
		wantInError string
	}{
		{"forged, no confirmation", encoded(t, forged), freshAt, "", "no confirmation of the control plane"},
		{"forged, a made-up confirmation", encoded(t, forged), freshAt, strings.Repeat("ab", 32), "no confirmation of the control plane"},
		{"altered: the genuine snapshot's confirmation on other content", encoded(t, forged), freshAt, genuineProof, "no confirmation of the control plane"},
		{"another fleet's snapshot, confirmed by its own control plane", encoded(t, forged), freshAt, otherFleetProof, "no confirmation of the control plane"},
		{"an old confirmation presented as fresh", encoded(t, genuine), freshAt, oldProof, "no confirmation of the control plane"},
		{"an old confirmation as it is", encoded(t, genuine), oldAt, oldProof, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			peer := newFakePeer(t, c.body, c.at, c.proof)
			cs := NewConfigSync(f.worker, ConfigSyncOptions{})
			err := cs.BootstrapFromPeers(f.ctx, PeerOptions{Addresses: []string{peer.URL}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}})
			if err == nil || !strings.Contains(err.Error(), c.wantInError) {
				t.Fatalf("bootstrap: %v, want an error saying %q", err, c.wantInError)
			}
			if _, snap := cs.Active(); snap != nil {
				t.Fatalf("installed the peer's revision %s", snap.Revision)
			}
			for _, a := range peer.auth {
				if strings.Contains(a, csSecret) {
					t.Fatalf("the worker sent the peer its secret: %q", a)
				}
			}
		})
	}

	// The control plane's own confirmation of that content, recent: installed.
	at, proof := confirmedBy(t, csSecret, genuine, now.Add(-time.Second))
	peer := newFakePeer(t, encoded(t, genuine), at, proof)
	cs := NewConfigSync(f.worker, ConfigSyncOptions{})
	if err := cs.BootstrapFromPeers(f.ctx, PeerOptions{Addresses: []string{peer.URL}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}}); err != nil {
		t.Fatalf("a genuinely confirmed copy: %v", err)
	}
	if _, snap := cs.Active(); snap == nil || snap.Revision != genuine.Revision {
		t.Fatalf("active %v, want the genuine revision", snap)
	}
}

// TestPeerCannotRollAWorkerBack: two honest peers, the first cut off from the control plane
// 40 s ago with revision 1, the second confirmed revision 2 a second ago. Both are within
// maxAge; the worker takes the most recently confirmed (before, the first that answered).
func TestPeerCannotRollAWorkerBack(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	now := f.e.Now()
	r1, r2 := csSnap(t, 1), csSnap(t, 2)
	at1, proof1 := confirmedBy(t, csSecret, r1, now.Add(-40*time.Second))
	at2, proof2 := confirmedBy(t, csSecret, r2, now.Add(-time.Second))
	behind := newFakePeer(t, encoded(t, r1), at1, proof1)
	current := newFakePeer(t, encoded(t, r2), at2, proof2)
	cs := NewConfigSync(f.worker, ConfigSyncOptions{})
	err := cs.BootstrapFromPeers(f.ctx, PeerOptions{Addresses: []string{behind.URL, current.URL}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, snap := cs.Active(); snap.Revision != r2.Revision {
		t.Fatalf("took revision %s (the peer behind), want %s", snap.Revision, r2.Revision)
	}
}

// TestLentCopyCarriesTheControlPlanesConfirmation: a worker that copied from a peer lends the
// copy on with the control plane's confirmation (so a third worker can check it), and a worker
// whose copy has no confirmation (one seeded by hand, a cached one) lends nothing.
func TestLentCopyCarriesTheControlPlanesConfirmation(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	snap := csSnap(t, 2)
	at, proof := confirmedBy(t, csSecret, snap, f.e.Now())
	origin := newFakePeer(t, encoded(t, snap), at, proof)
	copier := NewConfigSync(f.worker, ConfigSyncOptions{})
	opts := PeerOptions{Addresses: []string{origin.URL}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}}
	if err := copier.BootstrapFromPeers(f.ctx, opts); err != nil {
		t.Fatal(err)
	}
	lender := httptest.NewServer(copier.PeerConfigHandler(csSecret))
	t.Cleanup(lender.Close)
	third := NewConfigSync(f.worker, ConfigSyncOptions{})
	opts.Addresses = []string{lender.URL}
	if err := third.BootstrapFromPeers(f.ctx, opts); err != nil {
		t.Fatalf("a copy lent on: %v", err)
	}

	unconfirmed := NewConfigSync(f.worker, ConfigSyncOptions{})
	if err := unconfirmed.Seed(f.ctx, snap, "cache", f.e.Now()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer "+PeerToken(csSecret))
	rec := httptest.NewRecorder()
	unconfirmed.PeerConfigHandler(csSecret).ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("a copy without the control plane's confirmation was lent: %d", rec.Code)
	}
}

// TestPeerTokenReadsNoCredentials: PeerToken is the same from every worker of a fleet, so
// whoever answers at a peer's address once (here an impostor the bootstrapping worker asks)
// learns it, and replayed it to a real worker's ops listener: the lent snapshot came back whole,
// the cluster's password in it. Lent snapshots are sealed with a key derived from the worker
// secret: the replay gets bytes that hold no password and decode as no snapshot, while a worker
// holding the secret still bootstraps from the lender.
func TestPeerTokenReadsNoCredentials(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	snap := csSnap(t, 2) // credentials: {password: cluster-pw}
	at, proof := confirmedBy(t, csSecret, snap, f.e.Now())
	origin := newFakePeer(t, encoded(t, snap), at, proof) // a peer that predates sealing: plain
	lenderSync := NewConfigSync(f.worker, ConfigSyncOptions{})
	opts := PeerOptions{Addresses: []string{origin.URL}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}}
	if err := lenderSync.BootstrapFromPeers(f.ctx, opts); err != nil {
		t.Fatal(err)
	}
	lender := httptest.NewServer(lenderSync.PeerConfigHandler(csSecret))
	t.Cleanup(lender.Close)

	impostor := newFakePeer(t, []byte("{}"), at, "")
	victim := NewConfigSync(f.worker, ConfigSyncOptions{})
	_ = victim.BootstrapFromPeers(f.ctx, PeerOptions{Addresses: []string{impostor.URL}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}})
	impostor.mu.Lock()
	stolen := impostor.auth
	impostor.mu.Unlock()
	if len(stolen) == 0 || stolen[0] == "" {
		t.Fatal("the impostor was sent no token")
	}
	req, _ := http.NewRequest(http.MethodGet, lender.URL+PathPeerConfig, nil)
	req.Header.Set("Authorization", stolen[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if strings.Contains(string(body), "cluster-pw") {
			t.Errorf("the replayed token read the lender's snapshot with the cluster's password: %.200s", body)
		}
		if _, err := snapshot.Decode(body); err == nil {
			t.Errorf("the replayed token read the lender's snapshot")
		}
	}

	third := NewConfigSync(f.worker, ConfigSyncOptions{})
	opts.Addresses = []string{lender.URL}
	if err := third.BootstrapFromPeers(f.ctx, opts); err != nil {
		t.Fatalf("a worker holding the secret, from the lender: %v", err)
	}
	if _, got := third.Active(); got == nil || got.Revision != snap.Revision {
		t.Fatalf("active %v, want the lent revision", got)
	}
}

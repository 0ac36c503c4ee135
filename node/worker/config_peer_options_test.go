package worker

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
)

// Peer bootstrap without peers, a client or a maximum age is not configured, and says so; a
// peer address that is no URL is that peer's error, not a crash.
func TestPeerBootstrapOptionsAreChecked(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	cs := NewConfigSync(f.worker, ConfigSyncOptions{})
	ok := PeerOptions{Addresses: []string{"127.0.0.1:1"}, MaxAge: time.Minute, Secret: csSecret, Client: &http.Client{}}
	for name, mut := range map[string]func(*PeerOptions){
		"no addresses": func(p *PeerOptions) { p.Addresses = nil },
		"no max age":   func(p *PeerOptions) { p.MaxAge = 0 },
		"no client":    func(p *PeerOptions) { p.Client = nil },
	} {
		p := ok
		mut(&p)
		if err := cs.BootstrapFromPeers(f.ctx, p); err == nil || !strings.Contains(err.Error(), "not configured") {
			t.Errorf("%s: %v, want \"peer bootstrap not configured\"", name, err)
		}
	}
	bad := ok
	bad.Addresses = []string{"http://[::1"}
	if err := cs.BootstrapFromPeers(f.ctx, bad); err == nil || !strings.Contains(err.Error(), "peer http://[::1") {
		t.Errorf("an address that is no URL: %v, want an error naming it", err)
	}
	if cfg, _ := cs.Active(); cfg != nil {
		t.Fatal("a failed bootstrap installed a configuration")
	}
}

// A peer that answers 200 without saying when its snapshot was confirmed, or with a body that
// is no snapshot, lends nothing.
func TestPeerWithABrokenAnswerLendsNothing(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	cs := NewConfigSync(f.worker, ConfigSyncOptions{})
	for name, c := range map[string]struct{ confirmed, body, want string }{
		"no confirmation": {"", "{}", "no valid"},
		"not a snapshot":  {time.Now().UTC().Format(time.RFC3339Nano), "not json", "peer"},
	} {
		peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.confirmed != "" {
				w.Header().Set(snapshot.HeaderConfirmedAt, c.confirmed)
			}
			_, _ = w.Write([]byte(c.body))
		}))
		p := PeerOptions{Addresses: []string{peer.URL}, MaxAge: time.Hour, Secret: csSecret, Client: &http.Client{}}
		err := cs.BootstrapFromPeers(f.ctx, p)
		peer.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
		if cfg, _ := cs.Active(); cfg != nil {
			t.Fatalf("%s: a broken answer installed a configuration", name)
		}
	}
}

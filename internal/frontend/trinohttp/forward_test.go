package trinohttp

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/transport"
)

// noPeers is a fleet whose control plane lists no other worker.
type noPeers struct{}

func (noPeers) Peers() []transport.Peer            { return nil }
func (noPeers) RefreshPeers(context.Context) error { return nil }

func TestQueryIDNamesItsOwner(t *testing.T) {
	fwd, err := forward.New(forward.Options{Name: "w1", Secret: "s3cret", Directory: noPeers{}, Client: forward.NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond, Forward: fwd})
	_, qr := post(t, ts.addr, "SELECT 1")
	if owner, ok := ownerOf(qr.ID); !ok || owner != forward.OwnerID("w1") {
		t.Fatalf("query id %q names owner %q, want %q", qr.ID, owner, forward.OwnerID("w1"))
	}
	// A follow-up for a query of a worker nobody knows: Trino's unknown-query answer.
	other := strings.Replace(qr.NextURI, qr.ID, strings.TrimSuffix(qr.ID, forward.OwnerID("w1"))+"0badc0de", 1)
	if resp, _ := get(t, other); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("poll of an unknown owner's query: %d", resp.StatusCode)
	}
	// A poll claiming to be forwarded needs the shared worker secret.
	req, _ := http.NewRequest(http.MethodGet, qr.NextURI, nil)
	req.Header.Set(forward.HeaderHop, "1")
	req.Header.Set(forward.HeaderSecret, "wrong")
	if resp, _ := do(t, req); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("forged forwarded poll: %d", resp.StatusCode)
	}
	_, slow := post(t, ts.addr, "SELECT SLEEP(2)")
	req, _ = http.NewRequest(http.MethodGet, slow.NextURI, nil)
	req.Header.Set(forward.HeaderHop, "1")
	req.Header.Set(forward.HeaderSecret, "s3cret")
	req.Header.Set(forward.HeaderClientTLS, "true")
	resp, page := do(t, req)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(page.NextURI, "https://") {
		t.Fatalf("forwarded poll: %d, nextUri %q (the client used TLS at the first worker)", resp.StatusCode, page.NextURI)
	}
}

func TestQueryIDWithoutForwardingHasNoOwner(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond})
	_, qr := post(t, ts.addr, "SELECT 1")
	if owner, ok := ownerOf(qr.ID); ok {
		t.Fatalf("standalone query id %q names owner %q", qr.ID, owner)
	}
}

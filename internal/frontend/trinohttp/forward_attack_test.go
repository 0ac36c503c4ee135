package trinohttp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

type stalePeers []workerapi.Peer

func (p stalePeers) Peers() []workerapi.Peer          { return p }
func (stalePeers) RefreshPeers(context.Context) error { return nil }

// TestAnonymousPollCannotDrawTheWorkerSecretFromAWorker: the peer list of worker w1 still
// names w2 at an address someone else now answers. A client with no credentials at all polls
// w1 for a made-up query id ending in w2's owner id (a Trino poll is not authenticated: the
// nextUri is the capability); w1 forwards it. The impostor must not receive the worker secret.
func TestAnonymousPollCannotDrawTheWorkerSecretFromAWorker(t *testing.T) {
	const secret = "fleet-worker-secret-trino-0123"
	var mu sync.Mutex
	var seen []http.Header
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer impostor.Close()
	fwd, err := forward.New(forward.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Name: "w1", Secret: secret,
		Directory: stalePeers{{Name: "w2", Healthy: true, Endpoints: map[string]string{forward.Trino: impostor.URL}}},
		Client:    forward.NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond, Forward: fwd})
	id := "20261205_235900_00001_abcdef_" + forward.OwnerID("w2")
	for _, path := range []string{"/v1/statement/queued/" + id + "/y0123456789/1", "/v1/statement/executing/" + id + "/y0123456789/1"} {
		resp, err := http.Get("http://" + ts.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("w1 forwarded nothing to w2's address")
	}
	for _, h := range seen {
		for name, values := range h {
			for _, v := range values {
				if strings.Contains(v, secret) {
					t.Fatalf("an anonymous poll made w1 send the worker secret to w2's address in %s", name)
				}
			}
		}
	}
}

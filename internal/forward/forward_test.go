package forward

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

var testEnv = env.Real(slog.New(slog.DiscardHandler))

type peers []workerapi.Peer

func (p peers) Peers() []workerapi.Peer          { return p }
func (peers) RefreshPeers(context.Context) error { return nil }

func TestOwnerIDIsStableAndShaped(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringMatching(`[a-z0-9][a-z0-9.-]{0,20}`).Draw(t, "name")
		id := OwnerID(name)
		if !IsOwnerID(id) || OwnerID(name) != id {
			t.Fatalf("OwnerID(%q) = %q", name, id)
		}
	})
	if IsOwnerID("0123456g") || IsOwnerID("0123456") || IsOwnerID("ABCDEF01") {
		t.Fatal("IsOwnerID accepts a malformed id")
	}
}

func TestEndpointResolvesOwnersThroughThePeerList(t *testing.T) {
	list := peers{{Name: "w1", Endpoints: map[string]string{Trino: "http://w1:8080"}}, {Name: "w2", Endpoints: map[string]string{}}}
	f, err := New(Options{Env: testEnv, Name: "w2", Secret: "s", Directory: list, Client: NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if ep, err := f.Endpoint(context.Background(), OwnerID("w1"), Trino); err != nil || ep != "http://w1:8080" {
		t.Fatalf("w1's Trino endpoint: %q %v", ep, err)
	}
	if _, err := f.Endpoint(context.Background(), OwnerID("w1"), FlightSQL); err == nil {
		t.Fatal("an endpoint w1 does not advertise resolved")
	}
	if _, err := f.Endpoint(context.Background(), OwnerID("w3"), Trino); err == nil {
		t.Fatal("a worker not in the registry resolved")
	}
}

func TestInboundNeedsTheWorkerSecret(t *testing.T) {
	f, _ := New(Options{Env: testEnv, Name: "w1", Secret: "s3cret", Directory: peers{}, Client: NewClient(nil)})
	h := map[string]string{HeaderHop: "1", HeaderSecret: "nope", HeaderClientAddr: "10.1.2.3:4", HeaderClientTLS: "true"}
	get := func(k string) string { return h[k] }
	if _, err := f.Inbound(get, BindTrino); err != ErrBadHop {
		t.Fatalf("wrong secret: %v", err)
	}
	var none *Forwarder
	if _, err := none.Inbound(get, BindTrino); err != ErrBadHop {
		t.Fatalf("a node without forwarding took a forwarded request: %v", err)
	}
	h[HeaderSecret] = "s3cret"
	hop, err := f.Inbound(get, BindTrino)
	if err != nil || !hop.Forwarded || hop.ClientAddr != "10.1.2.3:4" || !hop.ClientTLS {
		t.Fatalf("forwarded request: %+v %v", hop, err)
	}
	if hop, err := f.Inbound(func(string) string { return "" }, BindTrino); err != nil || hop.Forwarded {
		t.Fatalf("direct request: %+v %v", hop, err)
	}
}

// advertisedSet is what a test owner advertises; servers started after the owner add theirs.
type advertisedSet struct {
	mu  sync.Mutex
	eps map[string]string
}

func (a *advertisedSet) add(endpoint string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.eps == nil {
		a.eps = map[string]string{}
	}
	a.eps[fmt.Sprint("ep", len(a.eps))] = endpoint
}

func (a *advertisedSet) get() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.eps)
}

// testOwner is the forwarder of worker name as the receiving end of forwards (no peers, no
// client), advertising endpoints and whatever is added to the set later.
func testOwner(e env.Env, name, secret string, endpoints ...string) (*Forwarder, *advertisedSet) {
	a := &advertisedSet{}
	for _, ep := range endpoints {
		a.add(ep)
	}
	return &Forwarder{opts: Options{Env: e, Name: name, Secret: secret, Advertised: a.get}, self: OwnerID(name), metrics: newMetrics(nil)}, a
}

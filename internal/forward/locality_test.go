package forward

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// Rendezvous hashing: the owner is one of the candidates whatever their order, and removing a
// worker that does not own a key, or adding one that does not take it, leaves the key where it was.
func TestOwnerIsStableUnderFleetChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`w[0-9]{1,3}`), 1, 12, rapid.ID[string]).Draw(t, "workers")
		key := rapid.String().Draw(t, "key")
		owner := Owner(key, names)
		if !slices.Contains(names, owner) {
			t.Fatalf("owner %q not among %v", owner, names)
		}
		shuffled := slices.Clone(names)
		slices.Reverse(shuffled)
		if got := Owner(key, shuffled); got != owner {
			t.Fatalf("order changed the owner: %q, then %q", owner, got)
		}
		i := rapid.IntRange(0, len(names)-1).Draw(t, "removed")
		if names[i] != owner {
			rest := slices.Delete(slices.Clone(names), i, i+1)
			if got := Owner(key, rest); got != owner {
				t.Fatalf("removing %s moved the key from %s to %s", names[i], owner, got)
			}
		}
	})
	if Owner("k", nil) != "" {
		t.Fatal("a key has an owner in an empty fleet")
	}
}

// Keys spread over the workers: with 4 workers and 4000 keys, each owns between 20% and 30%.
func TestOwnerSpreadsKeys(t *testing.T) {
	names := []string{"w1", "w2", "w3", "w4"}
	count := map[string]int{}
	for k := range 4000 {
		count[Owner(string(rune(k))+"key", names)]++
	}
	for _, n := range names {
		if count[n] < 800 || count[n] > 1200 {
			t.Fatalf("keys per worker %v", count)
		}
	}
}

// The owner is chosen among healthy, eligible workers that take forwarded queries; a key this
// worker owns, or one no worker can take, runs here.
func TestLocalityRunsHereUnlessAnEligiblePeerOwnsTheKey(t *testing.T) {
	list := peers{
		{Name: "self", Endpoints: map[string]string{Trino: "http://127.0.0.1:1"}, Healthy: true, Labels: map[string]string{"zone": "eu"}},
		{Name: "us", Endpoints: map[string]string{Trino: "http://127.0.0.1:1"}, Healthy: true, Labels: map[string]string{"zone": "us"}},
		{Name: "sick", Endpoints: map[string]string{Trino: "http://127.0.0.1:1"}, Healthy: false, Labels: map[string]string{"zone": "eu"}},
		{Name: "noTrino", Endpoints: map[string]string{FlightSQL: "grpc+tcp://127.0.0.1:1"}, Healthy: true, Labels: map[string]string{"zone": "eu"}},
	}
	f, err := New(Options{Env: testEnv, Name: "self", Secret: "s", Directory: list, Client: NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	eu := func(l map[string]string) bool { return l["zone"] == "eu" }
	got := f.Locality().candidates(eu)
	if len(got) != 1 || got["self"] == "" {
		t.Fatalf("candidates for zone eu: %v", got)
	}
	req := &query.Request{SQL: "SELECT 1", User: "u", Protocol: query.ProtocolTrino}
	if _, err := f.Locality().Run(context.Background(), req, "k", eu, 1e9); !errors.Is(err, proxy.ErrRunHere) {
		t.Fatalf("the only eligible worker is this one, yet: %v", err)
	}
	// us owns every key among {us}; it does not listen (port 1): the query runs here.
	us := func(l map[string]string) bool { return l["zone"] == "us" }
	if _, err := f.Locality().Run(context.Background(), req, "k", us, 1e9); !errors.Is(err, proxy.ErrRunHere) {
		t.Fatalf("an unreachable owner: %v", err)
	}
}

// A peer takes whole queries on its Trino listener, else on its ops listener (a sidecar with
// only a PostgreSQL frontend); a peer with neither is no candidate.
func TestQueryEndpointFallsBackToTheOpsListener(t *testing.T) {
	list := peers{
		{Name: "trino", Endpoints: map[string]string{Trino: "http://t:1", Query: "http://t:2"}, Healthy: true},
		{Name: "sidecar", Endpoints: map[string]string{Query: "https://s:2"}, Healthy: true},
		{Name: "flightOnly", Endpoints: map[string]string{FlightSQL: "grpc+tcp://f:1"}, Healthy: true},
	}
	f, err := New(Options{Env: testEnv, Name: "self", Secret: "s", Directory: list, Client: NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	got := f.Locality().candidates(func(map[string]string) bool { return true })
	if len(got) != 2 || got["trino"] != "http://t:1" || got["sidecar"] != "https://s:2" {
		t.Fatalf("candidates: %v", got)
	}
}

// A forwarded query's error reaches the forwarding worker's core as the peer's core saw it: a
// time limit stays one, a retryable error stays retryable.
func TestForwardedErrorKeepsItsKind(t *testing.T) {
	for _, sent := range []query.Error{
		{Code: query.CodeQueryTimeout, Message: "group timeout", TimedOut: true},
		{Code: query.CodeQueryTimeout, Message: "cancelled"},
		{Code: query.CodeCapacityTimeout, Message: "no capacity", Retryable: true},
	} {
		data, _ := json.Marshal(publicError(&sent))
		var eb errorBody
		if err := json.Unmarshal(data, &eb); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if got := eb.queryError(); *got != sent {
			t.Fatalf("sent %+v, the forwarding worker got %+v", sent, *got)
		}
	}
}

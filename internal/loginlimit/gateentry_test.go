package loginlimit

import (
	"fmt"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// evictingGate trusts every login; while it decides, other sources' logins begin on throttle,
// enough to forget the source of the login it decides (EntriesMax), and one more login from that
// source begins and is still under way when Admit returns.
type evictingGate struct {
	query.Gate
	throttle *Throttle
	again    query.Login
}

func (g *evictingGate) Admit(l query.Login) (bool, error) {
	for i := range g.throttle.cfg.EntriesMax {
		if err := g.throttle.Begin(login(fmt.Sprintf("198.51.100.%d:1", i+1), "bob")); err != nil {
			return false, err
		}
	}
	if err := g.throttle.Begin(g.again); err != nil {
		return false, err
	}
	return true, nil
}

// A trusted login ends its own count of logins under way (Gate.Admit hands the entry its
// Begin counted in to abandonedAt): if its source was forgotten and seen again meanwhile, the
// new entry keeps the login it counted, which is still under way.
func TestATrustedLoginEndsTheCountItBegan(t *testing.T) {
	th := New(Config{Failures: 3, EntriesMax: 4}, newClock().now, nil, nil)
	alice := login("203.0.113.7:1", "alice")
	g := Gate{Gate: &evictingGate{throttle: th, again: alice}, Throttle: th}
	trusted, err := g.Admit(alice)
	if err != nil || !trusted {
		t.Fatalf("Admit: %v %v", trusted, err)
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	el, ok := th.index[string(th.sourceKeyOf(alice.ClientAddr))]
	if !ok {
		t.Fatal("the source's new entry is gone")
	}
	if n := len(el.Value.(*entry).inFlight); n != 1 {
		t.Fatalf("the source's new entry counts %d logins under way, want the 1 that is", n)
	}
}

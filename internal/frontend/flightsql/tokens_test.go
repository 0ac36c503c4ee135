package flightsql

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestOneUserHoldsBoundedTokens: every Basic handshake issues a bearer token kept for TokenTTL
// (an hour), and nothing bounded how many: arrow-go's client handshaking in a loop as alice
// (1,473 a second from one process at load 35, +17.6 MB of daemon RSS per 40,000) would grow
// the server by gigabytes an hour. Now a user holds at most tokensPerUserMax; past it, its
// oldest token ends (Unauthenticated), its newest and other users' tokens work.
func TestOneUserHoldsBoundedTokens(t *testing.T) {
	s, addr := serve(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{Auth: passwords{"alice": "pw-a", "bob": "pw-b"}})
	c := dialFlight(t, addr)
	bob := login(t, c, "bob", "pw-b")
	first := login(t, c, "alice", "pw-a")
	var last context.Context
	for range tokensPerUserMax + 5 {
		last = login(t, c, "alice", "pw-a")
	}
	s.mu.Lock()
	held := 0
	for _, it := range s.tokens {
		if it.user == "alice" {
			held++
		}
	}
	queued := len(s.userTokens["alice"])
	s.mu.Unlock()
	if held != tokensPerUserMax || queued != tokensPerUserMax {
		t.Errorf("alice holds %d tokens (%d queued) after %d handshakes, want %d", held, queued, tokensPerUserMax+6, tokensPerUserMax)
	}
	if _, err := c.Execute(first, "SELECT 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("alice's oldest token past the bound: %v, want Unauthenticated", err)
	}
	for name, ctx := range map[string]context.Context{"alice's newest": last, "bob's": bob} {
		if _, err := c.Execute(ctx, "SELECT 1"); err != nil {
			t.Errorf("%s token: %v", name, err)
		}
	}
	// Expired tokens leave their users' queues too.
	s.expireOnce(time.Now().Add(s.opts.TokenTTL + time.Minute))
	s.mu.Lock()
	left, users := len(s.tokens), len(s.userTokens)
	s.mu.Unlock()
	if left != 0 || users != 0 {
		t.Errorf("after every token expired: %d tokens, %d users' queues; want none", left, users)
	}
}

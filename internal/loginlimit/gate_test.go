package loginlimit

import (
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/policy"
	"github.com/queryflux/queryflux/internal/query"
)

// gateOver is the throttle gate over the real policy of security (users alice, password "a",
// and carol, password "c", who must use TLS), as a node's frontends use it.
func gateOver(t *testing.T, security config.Security, failures int) (Gate, *policy.Policy) {
	t.Helper()
	cfg := &config.Config{}
	cfg.Translation.Mode = config.TranslationOff
	cfg.Clusters = []config.Cluster{{Name: "pg", Engine: config.EnginePostgres}}
	cfg.ClusterGroups = []config.ClusterGroup{{Name: "prod", Members: []string{"pg"}}}
	cfg.Settings.Security = security
	p := policy.New(nil)
	if err := p.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	return Gate{Gate: p, Throttle: New(Config{Failures: failures}, newClock().now, nil, nil)}, p
}

var gateUsers = []config.User{
	{Name: "alice", PasswordHash: policy.NativeHash("a")},
	{Name: "carol", PasswordHash: policy.NativeHash("c"), RequireTLS: true},
}

// logIn is a frontend's login through g: Admit, then (unless trusted) the password, then
// Verified or Failed.
func logIn(g Gate, p *policy.Policy, l query.Login, password string) error {
	trusted, err := g.Admit(l)
	if err != nil || trusted {
		return err
	}
	if !p.Postgres().CheckPassword(l.User, password) {
		g.Failed(l)
		return errors.New("wrong password")
	}
	return g.Verified(l)
}

func throttled(err error) bool {
	var qe *query.Error
	return errors.As(err, &qe) && qe.Code == query.CodeAuthRefused && strings.Contains(qe.Message, "too many failed logins")
}

// Wrong passwords through the gate block the source, right password or not; logins that end
// any other way (let in, trusted, refused by the policy) never add up to a refusal.
func TestGateCountsOnlyWrongPasswords(t *testing.T) {
	g, p := gateOver(t, config.Security{Users: gateUsers, AllowPlaintextPasswords: true}, 3)
	alice := login("203.0.113.7:1", "alice")
	for range 10 * inFlightMax {
		if err := logIn(g, p, alice, "a"); err != nil {
			t.Fatalf("the right password: %v", err)
		}
	}
	carol := login("203.0.113.8:1", "carol")
	for range 10 * inFlightMax {
		if err := logIn(g, p, carol, "c"); err == nil || throttled(err) {
			t.Fatalf("carol without TLS: %v, want the policy's refusal", err)
		}
	}
	for range 3 {
		if err := logIn(g, p, alice, "wrong"); throttled(err) {
			t.Fatalf("refused before the third failure: %v", err)
		}
	}
	if err := logIn(g, p, alice, "a"); !throttled(err) {
		t.Fatalf("after three wrong passwords the right one got %v, want the throttle's refusal", err)
	}
}

func TestGatePassesThePolicyRefusalsOn(t *testing.T) {
	g, p := gateOver(t, config.Security{RequireTLS: true}, 3)
	for range 10 * inFlightMax {
		if err := logIn(g, p, login("203.0.113.7:1", "alice"), "a"); err == nil || throttled(err) ||
			!strings.Contains(err.Error(), "encrypted") {
			t.Fatalf("a plain connection where TLS is required: %v, want the policy's refusal", err)
		}
	}
	g, p = gateOver(t, config.Security{TrustLoopback: true}, 3)
	for range 10 * inFlightMax {
		if err := logIn(g, p, login("127.0.0.1:1", "anyone"), ""); err != nil {
			t.Fatalf("a trusted loopback login: %v", err)
		}
	}
}

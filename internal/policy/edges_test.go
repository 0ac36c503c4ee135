package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/query"
)

// A rule's "*" groups match every group, and a denial names the catalog the query named.
func TestAccessRuleEdges(t *testing.T) {
	c := mustCompile(t, cfgWith(func(cfg *config.Config) {
		cfg.Settings.AccessControl.Rules = []config.AccessRule{
			{Users: []string{"bob"}, Groups: []string{"*"}, Effect: config.EffectDeny},
			{Roles: []string{"analyst"}, Groups: []string{"*"}, Catalogs: []string{"*"}},
		}
	}))
	for _, group := range []string{"prod", "dev"} {
		if err := c.Check(&query.Request{User: "alice", Database: "sales", SQL: "select 1"}, group); err != nil {
			t.Errorf("alice on %s: the analyst rule for every group refused: %v", group, err)
		}
		err := c.Check(&query.Request{User: "bob", Database: "hr", SQL: "select 1"}, group)
		if code(err) != query.CodeAccessDenied || !strings.Contains(err.Error(), `(catalog "hr")`) {
			t.Errorf("bob on %s: got %v, want a denial naming the catalog", group, err)
		}
	}
}

// A guard that answers anything but None, a bool or a string denies, as does one that tries to
// change its context; the context names the group's engine.
func TestGuardAnswersAndContext(t *testing.T) {
	for _, tc := range []struct{ name, body, group, want string }{
		{"int", "return 1", "prod", "returned int, want None, a bool or a reason string"},
		{"list", "return []", "prod", "returned list"},
		{"engine", `return ctx["engine"] == "duckdb"`, "dev", ""},
		{"engine-prod", `return ctx["engine"] == "duckdb"`, "prod", "denied by guard script settings.guardScripts[0] (engine-prod)"},
		{"writes-ctx", `ctx["group"] = "dev"`, "prod", "guard failed"},
	} {
		c := mustCompile(t, cfgWith(func(cfg *config.Config) {
			cfg.Settings.GuardScripts = []config.Script{{Name: tc.name, Source: "def guard(query, ctx):\n    " + tc.body + "\n"}}
		}))
		err := c.Check(&query.Request{User: "alice", SQL: "select 1"}, tc.group)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (code(err) != query.CodeAccessDenied || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an access denial with %q", tc.name, err, tc.want)
		}
	}
}

// A translation script that returns neither a string nor None is a failure, never an empty SQL.
func TestTranslationOfTheWrongType(t *testing.T) {
	for _, strict := range []bool{true, false} {
		c := mustCompile(t, cfgWith(func(cfg *config.Config) {
			cfg.Translation = config.Translation{Mode: config.TranslationScripts, ErrorOnUnsupported: strict,
				Scripts: []config.Script{{Name: "num", Source: "def transform(sql, src, dst):\n    return 42\n"}}}
		}))
		req := &query.Request{User: "alice", SQL: "select 1"}
		err := c.Check(req, "dev")
		if strict && (code(err) != CodeTranslation || !strings.Contains(err.Error(), "transform returned int")) {
			t.Errorf("strict: got %v, want a translation error naming the type", err)
		}
		if !strict && (err != nil || req.SQL != "select 1") {
			t.Errorf("lenient: got %v / %q, want the SQL passed through", err, req.SQL)
		}
	}
}

// Every protocol's failure series exists from the start, so a rate over it is defined before
// the first failure.
func TestAuthFailureSeriesStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg)
	if n := testutil.CollectAndCount(reg, "queryflux_auth_failures_total"); n != 4 {
		t.Fatalf("%d auth failure series, want one per protocol (4)", n)
	}
}

// Admit and Verified decide a login by settings.security, and count each refusal.
func TestAdmitDecisions(t *testing.T) {
	const pg = query.ProtocolPostgres
	for _, tc := range []struct {
		name     string
		sec      config.Security // users: alice, bob unless trustLoopback
		aliceTLS bool            // alice's own requireTLS
		login    query.Login
		trusted  bool
		refused  string // Admit's refusal ("" none)
		verify   string // Verified's refusal after a right password ("" none)
	}{
		{name: "plain challenge-response", login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5"}},
		{name: "requireTLS refuses plain", sec: config.Security{RequireTLS: true},
			login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5"}, refused: "only encrypted connections"},
		{name: "requireTLS over TLS", sec: config.Security{RequireTLS: true},
			login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5", TLS: true}},
		{name: "cleartext without TLS", login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5", Cleartext: true},
			refused: "not accepted over an unencrypted connection"},
		{name: "cleartext allowed", sec: config.Security{AllowPlaintextPasswords: true},
			login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5", Cleartext: true}},
		{name: "cleartext over TLS", login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5", Cleartext: true, TLS: true}},
		{name: "user requireTLS", aliceTLS: true, login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5"},
			verify: "this user must connect with TLS"},
		{name: "user requireTLS over TLS", aliceTLS: true, login: query.Login{User: "alice", ClientAddr: "10.0.0.1:5", TLS: true}},
		{name: "other user of a requireTLS user's config", aliceTLS: true, login: query.Login{User: "bob", ClientAddr: "10.0.0.1:5"}},
		{name: "loopback trusted", sec: config.Security{TrustLoopback: true},
			login: query.Login{User: "anyone", ClientAddr: "127.0.0.1:5"}, trusted: true},
		{name: "loopback v6 trusted", sec: config.Security{TrustLoopback: true},
			login: query.Login{User: "anyone", ClientAddr: "[::1]:5"}, trusted: true},
		{name: "trustLoopback, remote", sec: config.Security{TrustLoopback: true},
			login: query.Login{User: "anyone", ClientAddr: "10.0.0.1:5"}},
		{name: "trustLoopback, no user name", sec: config.Security{TrustLoopback: true},
			login: query.Login{ClientAddr: "127.0.0.1:5"}},
		{name: "trustLoopback, requireTLS first", sec: config.Security{TrustLoopback: true, RequireTLS: true},
			login: query.Login{User: "anyone", ClientAddr: "127.0.0.1:5"}, refused: "only encrypted connections"},
	} {
		reg := prometheus.NewRegistry()
		p := New(reg)
		if err := p.Apply(cfgWith(func(cfg *config.Config) {
			cfg.Settings.Security.RequireTLS = tc.sec.RequireTLS
			cfg.Settings.Security.AllowPlaintextPasswords = tc.sec.AllowPlaintextPasswords
			cfg.Settings.Security.TrustLoopback = tc.sec.TrustLoopback
			if tc.sec.TrustLoopback {
				cfg.Settings.Security.Users = nil
			}
			if tc.aliceTLS {
				cfg.Settings.Security.Users[0].RequireTLS = true
			}
		})); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tc.login.Protocol = pg
		trusted, err := p.Admit(tc.login)
		failures := 0
		if trusted != tc.trusted {
			t.Errorf("%s: trusted %v, want %v", tc.name, trusted, tc.trusted)
		}
		if tc.refused == "" && err != nil || tc.refused != "" && (code(err) != query.CodeAuthRefused || !strings.Contains(err.Error(), tc.refused)) {
			t.Errorf("%s: Admit: %v, want refusal %q", tc.name, err, tc.refused)
		}
		if tc.refused != "" {
			failures++
		} else {
			err = p.Verified(tc.login)
			if tc.verify == "" && err != nil || tc.verify != "" && (code(err) != query.CodeAuthRefused || !strings.Contains(err.Error(), tc.verify)) {
				t.Errorf("%s: Verified: %v, want refusal %q", tc.name, err, tc.verify)
			}
			if tc.verify != "" {
				failures++
			}
		}
		if got := testutil.ToFloat64(p.failures.WithLabelValues(pg)); int(got) != failures {
			t.Errorf("%s: %v failures counted, want %d", tc.name, got, failures)
		}
	}
	var none Policy
	if _, err := none.Admit(query.Login{User: "alice"}); err != query.ErrNotConfigured {
		t.Errorf("Admit before any configuration: %v, want ErrNotConfigured", err)
	}
	if err := none.Verified(query.Login{User: "alice"}); err != query.ErrNotConfigured {
		t.Errorf("Verified before any configuration: %v, want ErrNotConfigured", err)
	}
}

// Each frontend's authenticator lets in only a configured user with the right password, refuses
// bearer tokens (the configuration holds none) and counts every refusal under its protocol.
func TestAuthenticatorsRefuseWhatTheConfigurationDoesNot(t *testing.T) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("c"), bcrypt.MinCost)
	reg := prometheus.NewRegistry()
	p := New(reg)
	if err := p.Apply(cfgWith(func(cfg *config.Config) {
		cfg.Settings.Security.Users = append(cfg.Settings.Security.Users, config.User{Name: "carol", PasswordHash: string(bc)})
	})); err != nil {
		t.Fatal(err)
	}
	failures := func(proto string) int { return int(testutil.ToFloat64(p.failures.WithLabelValues(proto))) }
	ctx := context.Background()

	type login struct{ user, password, token string }
	ok := []login{{"alice", "a", ""}, {"carol", "c", ""}}
	bad := []login{{"alice", "b", ""}, {"mallory", "a", ""}, {"", "", ""}, {"alice", "", "a-token"}, {"", "", "a-token"}}
	for _, l := range ok {
		if u, err := p.Trino().Authenticate(ctx, trinohttp.Credentials{User: l.user, Password: l.password}); err != nil || u != l.user {
			t.Errorf("trino %s: %q %v", l.user, u, err)
		}
		if u, err := p.FlightSQL().Authenticate(ctx, flightsql.Credentials{User: l.user, Password: l.password}); err != nil || u != l.user {
			t.Errorf("flightsql %s: %q %v", l.user, u, err)
		}
	}
	for i, l := range bad {
		if u, err := p.Trino().Authenticate(ctx, trinohttp.Credentials{User: l.user, Password: l.password, Token: l.token}); err == nil {
			t.Errorf("trino let in %+v as %q", l, u)
		}
		if u, err := p.FlightSQL().Authenticate(ctx, flightsql.Credentials{User: l.user, Password: l.password, Token: l.token}); err == nil {
			t.Errorf("flightsql let in %+v as %q", l, u)
		}
		if failures(query.ProtocolTrino) != i+1 || failures("flightsql") != i+1 {
			t.Errorf("after %d refusals: trino counted %d, flightsql %d", i+1, failures(query.ProtocolTrino), failures("flightsql"))
		}
	}

	my := myAuth{p}
	if _, known, _ := my.Passwords("mallory"); known {
		t.Error("mysql: an unknown user is known")
	}
	if _, known, _ := my.Passwords("carol"); !known {
		t.Error("mysql: carol is unknown")
	}
	salt := []byte("0123456789abcdefghij")
	if !my.CheckNativeScramble("alice", salt, clientScramble("a", salt)) || my.CheckNativeScramble("alice", salt, clientScramble("b", salt)) {
		t.Error("mysql: alice's native scramble")
	}
	if my.CheckNativeScramble("carol", salt, clientScramble("c", salt)) || my.CheckNativeScramble("mallory", salt, clientScramble("a", salt)) {
		t.Error("mysql: a native scramble accepted for a bcrypt user or an unknown one")
	}
	if !my.CheckCleartext("carol", "c") || my.CheckCleartext("carol", "a") {
		t.Error("mysql: carol's cleartext password")
	}

	pg := pgAuth{p}
	if _, ok := pg.SCRAMVerifier("alice"); ok {
		t.Error("postgres: a SCRAM verifier for a user with a native hash")
	}
	if _, ok := pg.MockSCRAMVerifier("alice"); ok {
		t.Error("postgres: a mock verifier for a configured user")
	}
	if !pg.CheckPassword("carol", "c") || pg.CheckPassword("carol", "a") || pg.CheckPassword("mallory", "c") {
		t.Error("postgres: cleartext passwords")
	}
}

// A loopback client named by its address alone (no port) is still loopback; any other is not.
func TestLoopbackAddresses(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1": true, "127.0.0.1:5432": true, "[::1]:1": true, "::1": true,
		"10.0.0.1": false, "10.0.0.1:5432": false, "": false, "localhost:5432": false, "/run/qf.sock": false} {
		if isLoopback(addr) != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, !want, want)
		}
	}
}

// A malformed hash of any form lets no password in, however it is malformed.
func TestMalformedHashesAcceptNothing(t *testing.T) {
	good, err := SCRAMHash("pw", []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	iterSalt, keys, _ := strings.Cut(strings.TrimPrefix(good, "SCRAM-SHA-256$"), "$")
	_, salt, _ := strings.Cut(iterSalt, ":")
	stored, server, _ := strings.Cut(keys, ":")
	native := NativeHash("pw")
	for _, h := range []string{
		"SCRAM-SHA-256$" + iterSalt,                                      // no keys
		"SCRAM-SHA-256$4096" + salt + "$" + keys,                         // no ':' between iterations and salt
		"SCRAM-SHA-256$" + iterSalt + "$" + stored,                       // no server key
		"SCRAM-SHA-256$0:" + salt + "$" + keys,                           // no iterations
		"SCRAM-SHA-256$-1:" + salt + "$" + keys,                          // negative iterations
		"SCRAM-SHA-256$x:" + salt + "$" + keys,                           // not a number
		"SCRAM-SHA-256$4096:@@@$" + keys,                                 // salt not base64
		"SCRAM-SHA-256$" + iterSalt + "$@@@:" + server,                   // stored key not base64
		"SCRAM-SHA-256$" + iterSalt + "$" + stored[:20] + "==:" + server, // stored key of the wrong length
		"*" + strings.Repeat("Z", 40),                                    // native: not hex
		"$2a$10$short",                                                   // bcrypt: truncated
		"pw", "", "*",
	} {
		for _, pw := range []string{"pw", "", "x"} {
			if CheckPassword(h, pw) {
				t.Errorf("hash %q accepted password %q", h, pw)
			}
		}
	}
	if !CheckPassword(good, "pw") || !CheckPassword(native, "pw") {
		t.Fatal("the well-formed hashes refuse their password")
	}
	stage2 := NativeStage2("pw")
	salt20 := []byte("0123456789abcdefghij")
	auth := clientScramble("pw", salt20)
	if CheckNativeScramble(stage2[:], salt20, auth[:19]) || CheckNativeScramble(stage2[:19], salt20, auth) || CheckNativeScramble(stage2[:], salt20, nil) {
		t.Error("a native scramble or stage-2 hash of the wrong length was accepted")
	}
	if _, err := decodeNative(good); err == nil {
		t.Error("decodeNative took a SCRAM verifier")
	}
	if _, err := SCRAMHash("pw", []byte("salt"), 0); err == nil {
		t.Error("SCRAMHash with no iterations gave a verifier")
	}
}

package flightsql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// countingAuth knows alice (password "pw") and the API token k3y (user bot); "ghost" is
// answered with no user and no error, which must not let anyone in.
type countingAuth struct {
	mu    sync.Mutex
	calls int
}

func (a *countingAuth) Authenticate(_ context.Context, c Credentials) (string, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	switch {
	case c.Token == "k3y":
		return "bot", nil
	case c.Token == "" && c.User == "alice" && c.Password == "pw":
		return "alice", nil
	case c.User == "ghost":
		return "", nil
	}
	return "", errors.New("bad credentials")
}

func (a *countingAuth) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// every: logins is not empty and each satisfies ok (each call of a statement, GetFlightInfo
// then DoGet, is authenticated on its own).
func every(logins []query.Login, ok func(query.Login) bool) bool {
	for _, l := range logins {
		if !ok(l) {
			return false
		}
	}
	return len(logins) > 0
}

func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// TestAuthDecisionsAsClientsSeeThem: every way a Flight SQL client presents itself (nothing,
// x-queryflux-user, Basic, Bearer, other schemes; plain and over TLS), what the Gate and the
// Authenticator are told, and what the client gets back.
func TestAuthDecisionsAsClientsSeeThem(t *testing.T) {
	cfg := frontendtest.SelfSignedTLS(t)
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	gate := &frontendtest.RecordingGate{
		Trust: map[string]bool{"trusted": true, "anonymous": true},
		Refuse: map[string]error{
			"closed":  &query.Error{Code: query.CodeNotConfigured, Message: "not configured yet"},
			"banned":  &query.Error{Code: query.CodeAuthRefused, Message: "banned here"},
			"ldapbug": errors.New("ldap down: bind password hunter2"),
		},
		RefuseVerified: map[string]error{"bot": &query.Error{Code: query.CodeAuthRefused, Message: "no bots today"}},
	}
	auth := &countingAuth{}
	_, addr := serve(t, backend, Options{Auth: auth, Gate: gate, TLS: frontendtest.Static(cfg)})
	plain := dialFlight(t, addr)

	// run executes a statement with the given metadata and returns the user it ran as.
	run := func(c *fsql.Client, kv ...string) (string, error) {
		t.Helper()
		before := len(backend.Requests())
		ctx := metadata.AppendToOutgoingContext(context.Background(), kv...)
		info, err := c.Execute(ctx, "types")
		if err != nil {
			return "", err
		}
		fetch(t, ctx, c, info)
		if len(backend.Requests()) != before+1 {
			t.Fatal("the statement did not reach the backend")
		}
		return backend.LastRequest(t).User, nil
	}
	wantUser := func(what, want string, kv ...string) {
		t.Helper()
		gate.Reset()
		if got, err := run(plain, kv...); err != nil || got != want {
			t.Errorf("%s: ran as %q (%v), want %q", what, got, err, want)
		}
	}
	wantRefused := func(what string, code codes.Code, msg string, kv ...string) {
		t.Helper()
		gate.Reset()
		if got, err := run(plain, kv...); status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
			t.Errorf("%s: ran as %q, error %v; want %s %q", what, got, err, code, msg)
		}
	}

	// Trusted clients need no password: named by x-queryflux-user, or nobody (anonymous).
	calls := auth.count()
	wantUser("trusted by name", "trusted", "x-queryflux-user", "trusted")
	admits, _, _ := gate.Reset()
	wantUser("trusted without a name", "anonymous")
	if !every(admits, func(l query.Login) bool {
		return l.User == "trusted" && strings.HasPrefix(l.ClientAddr, "127.0.0.1:") && !l.TLS && !l.Cleartext
	}) {
		t.Errorf("the Gate was told %+v", admits)
	}
	if req := backend.LastRequest(t); !strings.HasPrefix(req.ClientAddr, "127.0.0.1:") {
		t.Errorf("request client address %q", req.ClientAddr)
	}
	// A name the Gate does not trust, without credentials, is refused before the Authenticator.
	wantRefused("untrusted name", codes.Unauthenticated, "authentication required", "x-queryflux-user", "alice")
	if auth.count() != calls {
		t.Errorf("the Authenticator was asked %d times for logins without credentials", auth.count()-calls)
	}

	// Basic: extra spaces are fine; a malformed one says so; a wrong password counts as a failure.
	wantUser("Basic with spaces", "alice", "authorization", "  Basic   "+base64.StdEncoding.EncodeToString([]byte("alice:pw"))+" ")
	_, verifies, _ := gate.Reset()
	wantUser("Basic", "alice", "authorization", basicAuth("alice", "pw"))
	if _, verifies, _ = gate.Reset(); !every(verifies, func(l query.Login) bool { return l.User == "alice" && l.Cleartext }) {
		t.Errorf("Verified was told %+v", verifies)
	}
	wantRefused("Basic without a colon", codes.Unauthenticated, "malformed Basic credentials",
		"authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice")))
	wantRefused("wrong password", codes.Unauthenticated, "authentication failed", "authorization", basicAuth("alice", "bad"))
	gate.Reset()
	run(plain, "authorization", basicAuth("alice", "bad"))
	if _, _, fails := gate.Reset(); len(fails) != 1 || fails[0].User != "alice" || !fails[0].Cleartext {
		t.Errorf("a wrong password was reported as %+v, want one failure of alice", fails)
	}
	run(plain, "authorization", "Bearer unknown")
	if _, _, fails := gate.Reset(); len(fails) != 0 {
		t.Errorf("an unknown bearer token was reported as a failed password: %+v", fails)
	}
	wantRefused("an Authenticator answering no user", codes.Unauthenticated, "authentication failed", "authorization", basicAuth("ghost", "x"))

	// Bearer API tokens: Verified is asked about the user the token names, and may refuse it.
	wantRefused("a refused bot", codes.Unauthenticated, "no bots today", "authorization", "Bearer k3y")
	gate.Reset()
	run(plain, "authorization", "Bearer k3y")
	if _, verifies, _ = gate.Reset(); len(verifies) != 1 || verifies[0].User != "bot" {
		t.Errorf("Verified was told %+v, want bot", verifies)
	}
	// Only the Bearer scheme carries a token: another one is no credential (and anonymous is trusted).
	wantUser("another scheme", "anonymous", "authorization", "Token k3y")

	// The Gate's refusals: not configured is Unavailable, a policy refusal says why, anything
	// else says no more than "authentication failed".
	wantRefused("not configured", codes.Unavailable, "not configured yet", "x-queryflux-user", "closed")
	wantRefused("banned", codes.Unauthenticated, "banned here", "x-queryflux-user", "banned")
	gate.Reset()
	if _, err := run(plain, "x-queryflux-user", "ldapbug"); status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != "authentication failed" {
		t.Errorf("a Gate's internal error: %v", err)
	}

	// Over TLS the Gate is told so.
	pool := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool.AddCert(leaf)
	secure, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})))
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	gate.Reset()
	if got, err := run(secure, "authorization", basicAuth("alice", "pw")); err != nil || got != "alice" {
		t.Fatalf("over TLS: %q %v", got, err)
	}
	if admits, _, _ := gate.Reset(); !every(admits, func(l query.Login) bool { return l.TLS }) {
		t.Errorf("over TLS the Gate was told %+v", admits)
	}
	// and plain calls are not.
	run(plain, "authorization", basicAuth("alice", "pw"))
	if admits, _, _ := gate.Reset(); !every(admits, func(l query.Login) bool { return !l.TLS }) {
		t.Errorf("in the clear the Gate was told %+v", admits)
	}
}

// TestWithoutAuthTheNamedUserRuns: with no Authenticator and no Gate, a call runs as the user
// x-queryflux-user names, else as anonymous.
func TestWithoutAuthTheNamedUserRuns(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	_, addr := serve(t, backend, Options{})
	c := dialFlight(t, addr)
	for _, tc := range []struct{ name, want string }{{"bob", "bob"}, {"", "anonymous"}} {
		ctx := context.Background()
		if tc.name != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-queryflux-user", tc.name)
		}
		info, err := c.Execute(ctx, "types")
		if err != nil {
			t.Fatal(err)
		}
		fetch(t, ctx, c, info)
		if got := backend.LastRequest(t).User; got != tc.want {
			t.Errorf("x-queryflux-user %q: ran as %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestHandshakeTokens: only a handshake issues a bearer token (no other call answers with
// one), a token works until TokenTTL and not after, and a server that is not configured yet
// still lets clients log in but serves nothing else.
func TestHandshakeTokens(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	_, addr := serve(t, backend, Options{Auth: passwords{"alice": "pw"}, TokenTTL: 300 * time.Millisecond})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &fsql.Client{Client: flight.NewClientFromConn(conn, nil)}

	// A stream call with Basic credentials answers without a token.
	basic := metadata.AppendToOutgoingContext(context.Background(), "authorization", basicAuth("alice", "pw"))
	stream, err := flight.NewFlightServiceClient(conn).ListActions(basic, &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	if md, err := stream.Header(); err != nil || len(md.Get("authorization")) != 0 {
		t.Fatalf("ListActions answered headers %v (%v): a token from a call that is no handshake", md, err)
	}

	ctx, err := c.Client.AuthenticateBasicToken(context.Background(), "alice", "pw")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Execute(ctx, "types")
	if err != nil {
		t.Fatalf("with a fresh token: %v", err)
	}
	fetch(t, ctx, c, info)

	backend.SetReady(false)
	if _, err := c.GetTableTypes(ctx); status.Code(err) != codes.Unavailable {
		t.Errorf("table types while not configured: %v, want Unavailable", err)
	}
	if _, err := c.Client.AuthenticateBasicToken(context.Background(), "alice", "pw"); err != nil {
		t.Errorf("a handshake while not configured: %v", err)
	}
	backend.SetReady(true)

	time.Sleep(400 * time.Millisecond) // past TokenTTL
	if _, err := c.Execute(ctx, "types"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("with an expired token: %v, want Unauthenticated", err)
	}
}

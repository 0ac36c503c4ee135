package pgwire

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/query"
)

// serveStub serves the stub backend with opts on a loopback port and returns its address;
// the test fails if a connection's handler panicked.
func serveStub(t *testing.T, opts Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := NewServer(stubBackend{}, opts)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() {
		_ = s.Close()
		if n := s.panics.Load(); n != 0 {
			t.Errorf("%d connection handlers panicked", n)
		}
	})
	return l.Addr().String()
}

// pgLogin logs in with pgx and runs one statement; it returns the error of either.
func pgLogin(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "select 1")
	return err
}

func sqlstateOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// observedUsers is an Authenticator (alice: SCRAM-SHA-256, bob: a cleartext password, both
// "pw") that counts the failures it is told of.
type observedUsers struct {
	bothUsers
	frontendtest.FailedLogins
}

// TestGateIsToldWhatEachLoginIs: what a login policy is told of each PostgreSQL login (the
// user, the client's address, TLS, whether the password travels in the clear), when it is
// asked (Admit before any password, Verified only once the password was right, Failed for a
// wrong one), and what the client gets when it refuses.
func TestGateIsToldWhatEachLoginIs(t *testing.T) {
	gate := &frontendtest.RecordingGate{
		Trust: map[string]bool{"trusted": true},
		Refuse: map[string]error{
			"banned": &query.Error{Code: query.CodeAuthRefused, Message: "banned from here"},
			"closed": &query.Error{Code: query.CodeNotConfigured, Message: "not configured yet"},
		},
		RefuseVerified: map[string]error{"alice": &query.Error{Code: query.CodeAuthRefused, Message: "this user must connect with TLS"}},
	}
	users := &observedUsers{bothUsers: bothUsers{NewStaticUsers(map[string]string{"alice": "pw"}, true), NewStaticUsers(map[string]string{"bob": "pw"}, false)}}
	addr := serveStub(t, Options{Gate: gate, Authenticator: users, TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	url := func(user, pw, sslmode string) string {
		return fmt.Sprintf("postgres://%s:%s@%s/d?sslmode=%s", user, pw, addr, sslmode)
	}
	// wantLogins: every login told is user's, from this client, with tls and cleartext as given.
	wantLogins := func(what string, logins []query.Login, n int, user string, tls, cleartext bool) {
		t.Helper()
		if len(logins) != n {
			t.Fatalf("%s: told %d logins %+v, want %d", what, len(logins), logins, n)
		}
		for _, l := range logins {
			if l.Protocol != query.ProtocolPostgres || l.User != user || !strings.HasPrefix(l.ClientAddr, "127.0.0.1:") || l.TLS != tls || l.Cleartext != cleartext {
				t.Fatalf("%s: told %+v, want user %s from 127.0.0.1, TLS %v, cleartext %v", what, l, user, tls, cleartext)
			}
		}
	}

	// bob's password travels in the clear; over TLS the Gate is told so.
	for _, secure := range []bool{false, true} {
		mode := map[bool]string{false: "disable", true: "require"}[secure]
		gate.Reset()
		if err := pgLogin(url("bob", "pw", mode)); err != nil {
			t.Fatalf("bob, sslmode=%s: %v", mode, err)
		}
		admits, verifies, fails := gate.Reset()
		wantLogins("bob's Admit, sslmode="+mode, admits, 1, "bob", secure, true)
		wantLogins("bob's Verified, sslmode="+mode, verifies, 1, "bob", secure, true)
		wantLogins("bob's failures", fails, 0, "", false, false)
	}

	// alice's SCRAM proof is no cleartext password; her own rule refuses her once her password
	// was found right (and only then: a wrong one is a wrong password, which names nobody).
	gate.Reset()
	err := pgLogin(url("alice", "pw", "disable"))
	if sqlstateOf(err) != "28000" || !strings.Contains(err.Error(), "this user must connect with TLS") {
		t.Fatalf("alice refused by Verified: %v, want 28000 with the Gate's message", err)
	}
	admits, verifies, _ := gate.Reset()
	wantLogins("alice's Admit", admits, 1, "alice", false, false)
	wantLogins("alice's Verified", verifies, 1, "alice", false, false)
	err = pgLogin(url("alice", "wrong", "disable"))
	if sqlstateOf(err) != "28P01" || strings.Contains(err.Error(), "TLS") {
		t.Fatalf("alice, wrong password: %v, want 28P01 only", err)
	}
	_, verifies, fails := gate.Reset()
	wantLogins("Verified after a wrong password", verifies, 0, "", false, false)
	if len(fails) != 1 || fails[0].User != "alice" || !strings.HasPrefix(fails[0].ClientAddr, "127.0.0.1:") || fails[0].Cleartext {
		t.Fatalf("a wrong password was told as %+v, want one failure of alice, a SCRAM proof (not cleartext) as Admit was told", fails)
	}
	if f := users.TakeFailed(); len(f) != 1 || f[0] != "alice" {
		t.Fatalf("the Authenticator was told of failures %v, want [alice]", f)
	}
	if err := pgLogin(url("bob", "wrong", "disable")); sqlstateOf(err) != "28P01" {
		t.Fatalf("bob, wrong password: %v", err)
	}
	if _, _, fails := gate.Reset(); len(fails) != 1 || fails[0].User != "bob" || !fails[0].Cleartext {
		t.Fatalf("bob's wrong password was told as %+v", fails)
	}
	if f := users.TakeFailed(); len(f) != 1 || f[0] != "bob" {
		t.Fatalf("the Authenticator was told of failures %v, want [bob]", f)
	}

	// Refused before any password: the Gate's code and message, no password asked for.
	err = pgLogin(url("banned", "pw", "disable"))
	if sqlstateOf(err) != "28000" || !strings.Contains(err.Error(), "banned from here") {
		t.Fatalf("banned: %v, want 28000 with the Gate's message", err)
	}
	if _, verifies, fails := gate.Reset(); len(verifies)+len(fails) != 0 {
		t.Fatalf("a refused login went on to a password: verified %+v, failed %+v", verifies, fails)
	}
	var pe *pgconn.PgError
	if err := pgLogin(url("closed", "pw", "disable")); !errors.As(err, &pe) || pe.Code != query.CodeNotConfigured || pe.Message != "not configured yet" {
		t.Fatalf("refused while not configured: %v, want the Gate's code %s and message", err, query.CodeNotConfigured)
	}
	gate.Reset()
	// Trusted: in without a password, and no password is checked.
	if err := pgLogin(url("trusted", "", "disable")); err != nil {
		t.Fatalf("trusted: %v", err)
	}
	admits, verifies, _ = gate.Reset()
	wantLogins("trusted's Admit", admits, 1, "trusted", false, true)
	if len(verifies) != 0 {
		t.Fatalf("a trusted login was verified as one with a password: %+v", verifies)
	}
	if f := users.TakeFailed(); len(f) != 0 {
		t.Fatalf("failures told for logins that did not fail: %v", f)
	}
}

// scramClient is the client side of a SCRAM-SHA-256 exchange over a raw connection, so that a
// test can send what a real client never would.
type scramClient struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialSCRAM(t *testing.T, addr, user string) *scramClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := &scramClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
	c.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user, "database": "d"}})
	if err := c.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := c.receive(); !isSASL(m) {
		t.Fatalf("%s: first answer %T %+v, want AuthenticationSASL", user, m, m)
	}
	return c
}

func isSASL(m pgproto3.BackendMessage) bool {
	a, ok := m.(*pgproto3.AuthenticationSASL)
	return ok && len(a.AuthMechanisms) == 1 && a.AuthMechanisms[0] == "SCRAM-SHA-256"
}

func (c *scramClient) receive() pgproto3.BackendMessage {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *scramClient) send(m pgproto3.FrontendMessage) {
	c.t.Helper()
	c.fe.Send(m)
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// first sends the client-first-message and returns the server-first-message's attributes.
func (c *scramClient) first(mechanism, msg string) (map[string]string, pgproto3.BackendMessage) {
	c.t.Helper()
	c.send(&pgproto3.SASLInitialResponse{AuthMechanism: mechanism, Data: []byte(msg)})
	m := c.receive()
	cont, ok := m.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		return nil, m
	}
	attrs := map[string]string{"": string(cont.Data)}
	for _, kv := range strings.Split(string(cont.Data), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			attrs[k] = v
		}
	}
	return attrs, m
}

// proof is the ClientProof of password for authMessage.
func proof(t *testing.T, password string, salt []byte, iterations int, authMessage string) string {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	clientKey := hmacSHA256(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	sig := hmacSHA256(stored[:], authMessage)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return base64.StdEncoding.EncodeToString(clientKey)
}

// final sends a client-final-message whose proof is password's for what it says (channel
// binding c, nonce r), and returns the answer.
func (c *scramClient) final(server map[string]string, clientFirstBare, channel, nonce, password string) pgproto3.BackendMessage {
	c.t.Helper()
	salt, err := base64.StdEncoding.DecodeString(server["s"])
	if err != nil {
		c.t.Fatalf("salt %q: %v", server["s"], err)
	}
	var iterations int
	fmt.Sscan(server["i"], &iterations)
	withoutProof := "c=" + channel + ",r=" + nonce
	p := proof(c.t, password, salt, iterations, clientFirstBare+","+server[""]+","+withoutProof)
	c.send(&pgproto3.SASLResponse{Data: []byte(withoutProof + ",p=" + p)})
	return c.receive()
}

// wantEnd: after an error the server sent nothing more and closed the connection (a client
// that reads on past a refused login gets no AuthenticationOk).
func (c *scramClient) wantEnd(what string) {
	c.t.Helper()
	if m, err := c.fe.Receive(); err == nil {
		c.t.Errorf("%s: after the error the server went on with %T %+v", what, m, m)
	}
}

func isError(m pgproto3.BackendMessage, code string) bool {
	e, ok := m.(*pgproto3.ErrorResponse)
	return ok && e.Code == code
}

// TestSCRAMExchangeRefusesWhatNoClientMaySend: a SCRAM-SHA-256 exchange with the right
// password still fails when its final message does not carry the server's nonce (a replayed
// or forged exchange) or binds another channel than its first message announced; a first
// message asking for channel binding, another mechanism, or without a nonce is refused. The
// same exchange with everything right logs in.
func TestSCRAMExchangeRefusesWhatNoClientMaySend(t *testing.T) {
	addr := serveStub(t, Options{Authenticator: NewStaticUsers(map[string]string{"alice": "pw"}, true)})
	const bare = "n=,r=clientnonce0123456789"
	gs2 := base64.StdEncoding.EncodeToString([]byte("n,,"))

	c := dialSCRAM(t, addr, "alice")
	server, m := c.first("SCRAM-SHA-256", "n,,"+bare)
	if server == nil || !strings.HasPrefix(server["r"], "clientnonce0123456789") || len(server["r"]) <= len("clientnonce0123456789") {
		t.Fatalf("server-first-message %+v (%T %+v): want the client's nonce extended", server, m, m)
	}
	if fin, ok := c.final(server, bare, gs2, server["r"], "pw").(*pgproto3.AuthenticationSASLFinal); !ok || !strings.HasPrefix(string(fin.Data), "v=") {
		t.Fatalf("the right exchange: %+v, want the server's signature", fin)
	}
	if _, ok := c.receive().(*pgproto3.AuthenticationOk); !ok {
		t.Fatal("the right exchange did not log in")
	}

	for _, tc := range []struct{ what, channel, nonce string }{
		{"the client's nonce alone", gs2, "clientnonce0123456789"},
		{"another server nonce", gs2, "clientnonce0123456789AAAAAAAAAAAAAAAAAAAAAAAA"},
		{"a channel binding of y,,", base64.StdEncoding.EncodeToString([]byte("y,,")), ""},
		{"no channel binding", "", ""},
	} {
		c := dialSCRAM(t, addr, "alice")
		server, _ := c.first("SCRAM-SHA-256", "n,,"+bare)
		nonce := tc.nonce
		if nonce == "" {
			nonce = server["r"]
		}
		if m := c.final(server, bare, tc.channel, nonce, "pw"); !isError(m, "28P01") {
			t.Errorf("%s with the right password: %T %+v, want 28P01", tc.what, m, m)
		}
		c.wantEnd(tc.what)
	}
	// Finals that are no proof at all: refused as a wrong password is.
	for what, final := range map[string]string{
		"no proof":                  "c=" + gs2 + ",r=",
		"a proof that is no base64": "c=" + gs2 + ",r=,p=!!!",
		"a proof of 40 bytes":       "c=" + gs2 + ",r=,p=" + base64.StdEncoding.EncodeToString(make([]byte, 40)),
		"a proof of 16 bytes":       "c=" + gs2 + ",r=,p=" + base64.StdEncoding.EncodeToString(make([]byte, 16)),
	} {
		c := dialSCRAM(t, addr, "alice")
		server, _ := c.first("SCRAM-SHA-256", "n,,"+bare)
		final = strings.Replace(final, ",r=", ",r="+server["r"], 1)
		c.send(&pgproto3.SASLResponse{Data: []byte(final)})
		if m := c.receive(); !isError(m, "28P01") {
			t.Errorf("%s: %T %+v, want 28P01", what, m, m)
		}
		c.wantEnd(what)
	}
	// Another message where the final one belongs.
	c = dialSCRAM(t, addr, "alice")
	c.first("SCRAM-SHA-256", "n,,"+bare)
	c.send(&pgproto3.Query{String: "select 1"})
	if m := c.receive(); !isError(m, "08P01") {
		t.Errorf("a query in place of the final message: %T %+v, want 08P01", m, m)
	}
	c.wantEnd("a query in place of the final message")
	for _, tc := range []struct{ what, mechanism, first string }{
		{"channel binding asked for", "SCRAM-SHA-256", "p=tls-server-end-point,," + bare},
		{"a gs2 header without its second comma", "SCRAM-SHA-256", "n,r=clientnonce"},
		{"no nonce", "SCRAM-SHA-256", "n,,n="},
		{"no gs2 header", "SCRAM-SHA-256", bare},
		{"another mechanism", "SCRAM-SHA-256-PLUS", "n,," + bare},
	} {
		c := dialSCRAM(t, addr, "alice")
		if _, m := c.first(tc.mechanism, tc.first); !isError(m, "08P01") && !isError(m, "28000") {
			t.Errorf("%s: %T %+v, want a protocol or authorization error", tc.what, m, m)
		}
		c.wantEnd(tc.what)
	}
}

// TestUnknownUsersAreAskedAsKnownOnes: with SCRAM-SHA-256 users, a name that does not exist
// is asked for a SCRAM exchange as a known one is (not for a cleartext password), with a salt
// of a known one's length that is the same on every attempt and differs from another unknown
// name's, as a known user's does: nothing tells a client which names exist. The exchange then
// fails as a wrong password does, whatever was sent.
func TestUnknownUsersAreAskedAsKnownOnes(t *testing.T) {
	addr := serveStub(t, Options{Authenticator: NewStaticUsers(map[string]string{"alice": "pw"}, true)})
	saltOf := func(user string) string {
		c := dialSCRAM(t, addr, user)
		server, m := c.first("SCRAM-SHA-256", "n,,n=,r=nonce")
		if server == nil {
			t.Fatalf("%s: %T %+v", user, m, m)
		}
		if m := c.final(server, "n=,r=nonce", base64.StdEncoding.EncodeToString([]byte("n,,")), server["r"], "pw"); user != "alice" && !isError(m, "28P01") {
			t.Fatalf("%s: %T %+v, want 28P01", user, m, m)
		}
		return server["s"] + " i=" + server["i"]
	}
	known, ghost, ghost2 := saltOf("alice"), saltOf("ghost"), saltOf("ghost2")
	if len(ghost) != len(known) || ghost[len(ghost)-7:] != known[len(known)-7:] {
		t.Fatalf("an unknown user's salt and iterations %q, a known one's %q", ghost, known)
	}
	if again := saltOf("ghost"); again != ghost {
		t.Fatalf("an unknown user's salt changed between attempts: %q, then %q", ghost, again)
	}
	if ghost2 == ghost {
		t.Fatalf("two unknown users have one salt %q", ghost)
	}
	if err := pgLogin(fmt.Sprintf("postgres://ghost:pw@%s/d?sslmode=disable", addr)); sqlstateOf(err) != "28P01" {
		t.Fatalf("an unknown user through pgx: %v, want 28P01", err)
	}
}

// decoyUsers answers every unknown user's mock verifier with a real one of the password
// "pw": the frontend must still never let such a user in.
type decoyUsers struct{ *StaticUsers }

func (d decoyUsers) MockSCRAMVerifier(string) (string, bool) {
	return d.StaticUsers.SCRAMVerifier("alice")
}

// TestAnUnknownUserNeverLogsIn: an unknown user's exchange fails even when its decoy verifier
// is one that the password sent matches.
func TestAnUnknownUserNeverLogsIn(t *testing.T) {
	addr := serveStub(t, Options{Authenticator: decoyUsers{NewStaticUsers(map[string]string{"alice": "pw"}, true)}})
	if err := pgLogin(fmt.Sprintf("postgres://alice:pw@%s/d?sslmode=disable", addr)); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if err := pgLogin(fmt.Sprintf("postgres://ghost:pw@%s/d?sslmode=disable", addr)); sqlstateOf(err) != "28P01" {
		t.Fatalf("an unknown user with the decoy's password: %v, want 28P01", err)
	}
}

// TestMockVerifierIsAVerifier: a mock verifier has the salt length asked for, even longer than
// one HMAC output, and parses as a verifier does.
func TestMockVerifierIsAVerifier(t *testing.T) {
	for _, n := range []int{16, 32, 40, 100} {
		v, err := parseSCRAMVerifier(MockVerifier([]byte("secret"), "ghost", n, 4096))
		if err != nil || len(v.salt) != n || v.iterations != 4096 {
			t.Fatalf("salt length %d: %+v %v", n, v, err)
		}
		if bytes.Equal(v.salt[:16], v.storedKey[:16]) || bytes.Equal(v.storedKey, v.serverKey) {
			t.Fatalf("salt length %d: the salt and keys are one value: %+v", n, v)
		}
	}
}

// remoteConn is a scripted connection from a client at addr.
type remoteConn struct {
	fakeConn
	addr net.Addr
}

func (c *remoteConn) RemoteAddr() net.Addr { return c.addr }

// TestTrustUsersOnlyFromLoopback: TrustUsers (a listed user, or "*") log in without a password
// only from a loopback address; from elsewhere they are asked for one.
func TestTrustUsersOnlyFromLoopback(t *testing.T) {
	for _, trust := range [][]string{{"carol"}, {"*"}} {
		s := NewServer(stubBackend{}, Options{TrustUsers: trust, Authenticator: NewStaticUsers(map[string]string{"carol": "pw"}, false)})
		for _, tc := range []struct {
			addr net.Addr
			want any
		}{
			{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, &pgproto3.AuthenticationOk{}},
			{&net.TCPAddr{IP: net.IPv6loopback, Port: 40000}, &pgproto3.AuthenticationOk{}},
			{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}, &pgproto3.AuthenticationCleartextPassword{}},
			{&net.UnixAddr{Name: "/tmp/sock", Net: "unix"}, &pgproto3.AuthenticationCleartextPassword{}},
		} {
			fc := &remoteConn{fakeConn: fakeConn{r: bytes.NewReader(startupAs("carol"))}, addr: tc.addr}
			s.handle(fc)
			fe := pgproto3.NewFrontend(bytes.NewReader(fc.out.Bytes()), nil)
			m, err := fe.Receive()
			if err != nil || fmt.Sprintf("%T", m) != fmt.Sprintf("%T", tc.want) {
				t.Errorf("TrustUsers %v, carol from %v: first answer %T (%v), want %T", trust, tc.addr, m, err, tc.want)
			}
		}
		_ = s.Close()
	}
	// a user not listed is asked for a password even from loopback
	s := NewServer(stubBackend{}, Options{TrustUsers: []string{"carol"}, Authenticator: NewStaticUsers(nil, false)})
	defer s.Close()
	out := runScript(t, s, startupAs("dave"))
	if m, err := pgproto3.NewFrontend(bytes.NewReader(out), nil).Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(*pgproto3.AuthenticationCleartextPassword); !ok {
		t.Fatalf("dave, not listed, from loopback: %T, want a password asked for", m)
	}
}

// verifierUsers answers every user's SCRAM verifier with the one it names.
type verifierUsers map[string]string

func (v verifierUsers) SCRAMVerifier(user string) (string, bool) { s, ok := v[user]; return s, ok }
func (verifierUsers) CheckPassword(string, string) bool          { return false }

// TestUnusableVerifiersLetNobodyIn: a stored verifier that is not a well-formed
// SCRAM-SHA-256 verifier (another method, a part missing, an iteration count that is no
// positive number, a part that is no base64, keys of another length) fails its user's login as
// a wrong password does, without crashing the connection's handler.
func TestUnusableVerifiersLetNobodyIn(t *testing.T) {
	good, err := NewSCRAMVerifier("pw", []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	method, rest, _ := strings.Cut(good, "$")
	iterSalt, keys, _ := strings.Cut(rest, "$")
	_, salt, _ := strings.Cut(iterSalt, ":")
	stored, server, _ := strings.Cut(keys, ":")
	short := base64.StdEncoding.EncodeToString(make([]byte, 31))
	bad := map[string]string{
		"md5":        "MD5$" + rest,
		"nomethod":   rest,
		"nokeys":     method + "$" + iterSalt,
		"nosalt":     method + "$4096$" + keys,
		"noserver":   method + "$" + iterSalt + "$" + stored,
		"zeroiter":   method + "$0:" + salt + "$" + keys,
		"negiter":    method + "$-1:" + salt + "$" + keys,
		"textiter":   method + "$many:" + salt + "$" + keys,
		"badsalt":    method + "$4096:!!$" + keys,
		"badstored":  method + "$" + iterSalt + "$!!:" + server,
		"badserver":  method + "$" + iterSalt + "$" + stored + ":!!",
		"shortstore": method + "$" + iterSalt + "$" + short + ":" + server,
		"shortserve": method + "$" + iterSalt + "$" + stored + ":" + short,
	}
	users := verifierUsers{"good": good}
	for user, v := range bad {
		users[user] = v
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(stubBackend{}, Options{Authenticator: users, Logger: slog.New(slog.DiscardHandler)})
	go func() { _ = s.Serve(l) }()
	defer s.Close()
	if err := pgLogin(fmt.Sprintf("postgres://good:pw@%s/d?sslmode=disable", l.Addr())); err != nil {
		t.Fatalf("the well-formed verifier: %v", err)
	}
	for user := range bad {
		if err := pgLogin(fmt.Sprintf("postgres://%s:pw@%s/d?sslmode=disable", user, l.Addr())); sqlstateOf(err) != "28P01" {
			t.Errorf("verifier %q: %v, want 28P01", users[user], err)
		}
	}
	if n := s.panics.Load(); n != 0 {
		t.Fatalf("%d connection handlers panicked", n)
	}
}

// TestARefusedLoginEndsTheConnection: whatever refused a login (the Gate before any password,
// a wrong cleartext password, a wrong SCRAM proof, the user's own rule once the password was
// right), the server sends its error and nothing more: a client reading on gets no
// AuthenticationOk and no ReadyForQuery, and the connection closes.
func TestARefusedLoginEndsTheConnection(t *testing.T) {
	gate := &frontendtest.RecordingGate{
		Refuse:         map[string]error{"banned": &query.Error{Code: query.CodeAuthRefused, Message: "banned"}},
		RefuseVerified: map[string]error{"carol": &query.Error{Code: query.CodeAuthRefused, Message: "carol must use TLS"}},
	}
	addr := serveStub(t, Options{Gate: gate, Authenticator: bothUsers{NewStaticUsers(map[string]string{"alice": "pw", "carol": "pw"}, true), NewStaticUsers(map[string]string{"bob": "pw"}, false)}})
	gs2 := base64.StdEncoding.EncodeToString([]byte("n,,"))
	for _, tc := range []struct{ user, password, code string }{
		{"alice", "wrong", "28P01"}, {"carol", "pw", "28000"},
	} {
		c := dialSCRAM(t, addr, tc.user)
		server, _ := c.first("SCRAM-SHA-256", "n,,n=,r=nonce")
		m := c.final(server, "n=,r=nonce", gs2, server["r"], tc.password)
		if _, proven := m.(*pgproto3.AuthenticationSASLFinal); proven { // the proof was right
			m = c.receive()
		}
		if !isError(m, tc.code) {
			t.Errorf("%s with %q: %T %+v, want %s", tc.user, tc.password, m, m, tc.code)
		}
		c.wantEnd(tc.user + " refused")
	}
	for _, tc := range []struct {
		user  string
		msgs  []pgproto3.FrontendMessage
		first string
	}{
		{"bob", []pgproto3.FrontendMessage{&pgproto3.PasswordMessage{Password: "wrong"}}, "28P01"},
		{"bob", []pgproto3.FrontendMessage{&pgproto3.Query{String: "select 1"}}, "28P01"},
		{"ghost", []pgproto3.FrontendMessage{&pgproto3.PasswordMessage{Password: "pw"}}, "28P01"},
		{"banned", nil, "28000"},
	} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := &scramClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
		c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": tc.user, "database": "d"}})
		m := c.receive()
		if _, asked := m.(*pgproto3.AuthenticationCleartextPassword); asked {
			for _, msg := range tc.msgs {
				c.fe.Send(msg)
			}
			c.send(&pgproto3.Query{String: "select 1"}) // a client that goes on as if logged in
			m = c.receive()
		}
		if !isError(m, tc.first) {
			t.Errorf("%s: %T %+v, want %s", tc.user, m, m, tc.first)
		}
		c.wantEnd(tc.user + " refused")
		nc.Close()
	}
}

// gateFailure is a Gate's own failure (not a refusal written for clients): its text names where
// the policy lives and the password of the store it reads, which no client may see and the log
// may show only without the password.
var gateFailure = errors.New("policy store postgres://qf:s3cretpw@10.9.8.7/policy: connection refused")

// TestAGateThatFailsTellsTheClientNothingOfIt: a Gate that fails at Admit or at Verified (an
// error that is not a query.Error) refuses the login with 28000 "authentication failed"; its
// text reaches the log, the store's password hidden, and never the client.
func TestAGateThatFailsTellsTheClientNothingOfIt(t *testing.T) {
	gate := &frontendtest.RecordingGate{
		Refuse:         map[string]error{"bob": gateFailure},
		RefuseVerified: map[string]error{"alice": gateFailure},
	}
	var log logbuf.Buffer
	users := bothUsers{NewStaticUsers(map[string]string{"alice": "pw"}, true), NewStaticUsers(map[string]string{"bob": "pw"}, false)}
	addr := serveStub(t, Options{Gate: gate, Authenticator: users, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for _, user := range []string{"bob", "alice"} { // refused at Admit, at Verified
		err := pgLogin(fmt.Sprintf("postgres://%s:pw@%s/d?sslmode=disable", user, addr))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28000" || pe.Message != "authentication failed" {
			t.Errorf("%s, the Gate failing: %v; want 28000 \"authentication failed\"", user, err)
		}
		if err != nil && (strings.Contains(err.Error(), "10.9.8.7") || strings.Contains(err.Error(), "s3cretpw")) {
			t.Errorf("%s: the client was told the Gate's failure: %v", user, err)
		}
	}
	if got := log.String(); strings.Count(got, "10.9.8.7") != 2 || strings.Contains(got, "s3cretpw") {
		t.Errorf("the log: %s; want the Gate's failure twice, without the store's password", got)
	}
}

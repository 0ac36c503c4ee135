package pgwire

import (
	"log/slog"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/query"
)

// stubGate is a login policy in miniature: "trusted" needs no password from loopback,
// "refused" is refused, "tlsonly" must encrypt, and a cleartext password needs TLS.
type stubGate struct{}

func (stubGate) Admit(l query.Login) (bool, error) {
	ip := net.ParseIP(l.ClientAddr)
	if host, _, err := net.SplitHostPort(l.ClientAddr); err == nil {
		ip = net.ParseIP(host)
	}
	switch {
	case l.User == "trusted" && ip != nil && ip.IsLoopback():
		return true, nil
	case l.User == "refused", l.User == "tlsonly" && !l.TLS, l.Cleartext && !l.TLS && l.User != "bob":
		return false, &query.Error{Code: query.CodeAuthRefused, Message: "refused"}
	}
	return false, nil
}

// bothUsers: alice logs in with SCRAM-SHA-256, bob with a cleartext password.
type bothUsers struct{ scram, clear *StaticUsers }

func (b bothUsers) SCRAMVerifier(user string) (string, bool) { return b.scram.SCRAMVerifier(user) }
func (b bothUsers) CheckPassword(user, pw string) bool {
	return b.scram.CheckPassword(user, pw) || b.clear.CheckPassword(user, pw)
}

func startupAs(user string) []byte {
	return encodeAll(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user, "database": "d"}})
}

// FuzzPGWireAuth sends arbitrary bytes as a connection's startup and authentication
// exchange (trust, refusals, SCRAM-SHA-256, cleartext): the handler may refuse, never panic.
func FuzzPGWireAuth(f *testing.F) {
	for _, user := range []string{"alice", "bob", "trusted", "refused", "tlsonly", "mallory", ""} {
		f.Add(startupAs(user))
		f.Add(append(startupAs(user), encodeAll(&pgproto3.PasswordMessage{Password: "pw"}, &pgproto3.Query{String: "select 1"})...))
	}
	f.Add(append(startupAs("alice"), encodeAll(
		&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abcdefghijkl")},
		&pgproto3.SASLResponse{Data: []byte("c=biws,r=abcdefghijkl,p=AAAA")})...))
	f.Add(append(startupAs("alice"), encodeAll(
		&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("p=tls-server-end-point,,n=,r=x")})...))
	f.Add(append(startupAs("alice"), encodeAll(&pgproto3.SASLInitialResponse{AuthMechanism: "PLAIN"})...))
	f.Add(append(encodeAll(&pgproto3.SSLRequest{}), startupAs("tlsonly")...))
	users := bothUsers{NewStaticUsers(map[string]string{"alice": "pw"}, true), NewStaticUsers(map[string]string{"bob": "pw"}, false)}
	s := NewServer(stubBackend{}, Options{Gate: stubGate{}, Authenticator: users, MessageBytesMax: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	f.Fuzz(func(t *testing.T, script []byte) {
		before := s.panics.Load()
		runScript(t, s, script)
		if p := s.panics.Load() - before; p != 0 {
			t.Fatalf("connection handler panicked %d times", p)
		}
	})
}

// TestAuthFuzzHarness: the harness reaches each branch it means to fuzz.
func TestAuthFuzzHarness(t *testing.T) {
	s := NewServer(stubBackend{}, Options{Gate: stubGate{}, Authenticator: bothUsers{
		NewStaticUsers(map[string]string{"alice": "pw"}, true), NewStaticUsers(map[string]string{"bob": "pw"}, false)}})
	defer s.Close()
	for user, want := range map[string]byte{
		"trusted": 'R', // AuthenticationOk
		"refused": 'E',
		"alice":   'R', // AuthenticationSASL
		"bob":     'R', // AuthenticationCleartextPassword
		"carol":   'E', // no SCRAM verifier: cleartext, refused without TLS
	} {
		out := runScript(t, s, startupAs(user))
		if len(out) == 0 || out[0] != want {
			t.Fatalf("%s: first message %q, want %q", user, out, want)
		}
	}
}

func (stubGate) Verified(query.Login) error { return nil }

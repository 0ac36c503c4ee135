package mysqlwire

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/query"
)

// observedUsers are StaticUsers told of every failed login.
type observedUsers struct {
	StaticUsers
	frontendtest.FailedLogins
}

// TestGateIsToldWhatEachMySQLLoginIs: under both auth methods, what a login policy is told of
// each MySQL login (the user, the client's address, TLS), when it is asked (Admit before the
// password, Verified only once the password was right, Failed for a wrong one), and what the
// client gets when it refuses.
func TestGateIsToldWhatEachMySQLLoginIs(t *testing.T) {
	gate := &frontendtest.RecordingGate{
		Trust:          map[string]bool{"trusted": true},
		Refuse:         map[string]error{"banned": &query.Error{Code: query.CodeAuthRefused, Message: "banned from here"}},
		RefuseVerified: map[string]error{"carol": &query.Error{Code: query.CodeAuthRefused, Message: "carol must use TLS"}},
	}
	backend := frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine()))
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		users := &observedUsers{StaticUsers: StaticUsers{"alice": "pw", "carol": "pw2"}}
		addr := startServer(t, backend, Options{Gate: gate, Users: users, AuthMethod: method, TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
		// ping logs in and returns the error, if any.
		ping := func(user, password string, secure bool) error {
			params := "tls=false"
			if secure {
				params = "tls=skip-verify"
			}
			return openDB(t, addr, user, password, "", params).Ping()
		}
		wantLogins := func(what string, logins []query.Login, n int, user string, tls bool) {
			t.Helper()
			if len(logins) != n {
				t.Fatalf("%s, %s: told %d logins %+v, want %d", method, what, len(logins), logins, n)
			}
			for _, l := range logins {
				if l.Protocol != query.ProtocolMySQL || l.User != user || !strings.HasPrefix(l.ClientAddr, "127.0.0.1:") || l.TLS != tls || l.Cleartext {
					t.Fatalf("%s, %s: told %+v, want user %s from 127.0.0.1, TLS %v", method, what, l, user, tls)
				}
			}
		}
		refused := func(what string, err error, msg string) {
			t.Helper()
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1045 || !strings.Contains(me.Message, msg) {
				t.Fatalf("%s, %s: %v, want 1045 %q", method, what, err, msg)
			}
		}

		for _, secure := range []bool{false, true} {
			gate.Reset()
			if err := ping("alice", "pw", secure); err != nil {
				t.Fatalf("%s, alice, TLS %v: %v", method, secure, err)
			}
			admits, verifies, fails := gate.Reset()
			wantLogins("alice's Admit", admits, 1, "alice", secure)
			wantLogins("alice's Verified", verifies, 1, "alice", secure)
			wantLogins("alice's failures", fails, 0, "", false)
		}
		refused("a wrong password", ping("alice", "nope", true), "Access denied")
		_, verifies, fails := gate.Reset()
		wantLogins("Verified after a wrong password", verifies, 0, "", false)
		wantLogins("a wrong password's failure", fails, 1, "alice", true)
		if f := users.TakeFailed(); len(f) != 1 || f[0] != "alice" {
			t.Fatalf("%s: Users told of failures %v, want [alice]", method, f)
		}

		refused("banned", ping("banned", "pw", true), "banned from here")
		if _, verifies, fails := gate.Reset(); len(verifies)+len(fails) != 0 {
			t.Fatalf("%s: a refused login went on to a password: verified %+v, failed %+v", method, verifies, fails)
		}
		if f := users.TakeFailed(); len(f) != 0 { // the Gate counts its refusals: Users too would count them twice
			t.Fatalf("%s: Users told of failures %v for a login the Gate refused", method, f)
		}
		refused("carol, refused once her password was right", ping("carol", "pw2", false), "carol must use TLS")
		_, verifies, _ = gate.Reset()
		wantLogins("carol's Verified", verifies, 1, "carol", false)
		if f := users.TakeFailed(); len(f) != 0 {
			t.Fatalf("%s: Users told of failures %v for a login the Gate refused once its password was right", method, f)
		}
		err := ping("carol", "nope", false)
		refused("carol's wrong password", err, "Access denied")
		if f := users.TakeFailed(); len(f) != 1 || f[0] != "carol" {
			t.Fatalf("%s: Users told of failures %v, want [carol]", method, f)
		}
		if strings.Contains(err.Error(), "TLS") {
			t.Fatalf("%s: a wrong password told the user's rule: %v", method, err)
		}
		gate.Reset()
		if err := ping("trusted", "anything", false); err != nil {
			t.Fatalf("%s, trusted: %v", method, err)
		}
		if _, verifies, fails := gate.Reset(); len(verifies)+len(fails) != 0 {
			t.Fatalf("%s: a trusted login was checked as one with a password: verified %+v, failed %+v", method, verifies, fails)
		}
		if f := users.TakeFailed(); len(f) != 0 {
			t.Fatalf("%s: Users told of failures %v for a trusted login", method, f)
		}
	}
}

// TestHashOnlyAndEmptyPasswordUsersLogIn: under both auth methods (caching_sha2_password over
// TLS and RSA-encrypted without it), a user stored only as a hash (ScrambleChecker,
// CleartextChecker: what the policy keeps) logs in with its password and not with another; a
// user whose password is empty logs in with none, and one with a password sending none is
// refused as MariaDB refuses it ("using password: NO"). Without Users only the loopback user
// logs in.
func TestHashOnlyAndEmptyPasswordUsersLogIn(t *testing.T) {
	backend := frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine()))
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		addr := startServer(t, backend, Options{Users: fuzzUsers{}, AuthMethod: method, TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
		for _, params := range []string{"tls=skip-verify", "tls=false"} {
			ping := func(user, password string) error { return openDB(t, addr, user, password, "", params).Ping() }
			for _, ok := range [][2]string{{"hashonly", "pw"}, {"alice", "pw"}, {"empty", ""}} {
				if err := ping(ok[0], ok[1]); err != nil {
					t.Fatalf("%s, %s, %s: %v", method, params, ok[0], err)
				}
			}
			for _, bad := range [][3]string{{"hashonly", "nope", "YES"}, {"hashonly", "", "NO"}, {"alice", "", "NO"}, {"empty", "x", "YES"}, {"mallory", "pw", "YES"}} {
				var me *mysql.MySQLError
				if err := ping(bad[0], bad[1]); !errors.As(err, &me) || me.Number != 1045 {
					t.Fatalf("%s, %s, %s with %q: %v, want 1045", method, params, bad[0], bad[1], err)
				} else if method == gomysql.AUTH_NATIVE_PASSWORD && !strings.Contains(me.Message, "using password: "+bad[2]) {
					t.Fatalf("%s, %s with %q: %q, want using password: %s", method, bad[0], bad[1], me.Message, bad[2])
				}
			}
		}
	}
	s, err := NewServer(backend, Options{LoopbackUser: "queryflux"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	if err := openDB(t, l.Addr().String(), "queryflux", "", "", "").Ping(); err != nil {
		t.Fatalf("the loopback user without Users: %v", err)
	}
	var me *mysql.MySQLError
	if err := openDB(t, l.Addr().String(), "alice", "pw", "", "").Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("alice without Users: %v, want 1045", err)
	}
	if n := s.panics.Load(); n != 0 {
		t.Fatalf("%d panics while logging in", n)
	}
}

// TestAGateThatFailsTellsTheClientNothingOfIt: under both auth methods, a Gate that fails at
// Admit or at Verified (an error that is not a query.Error: here one naming its store's
// address and password) refuses the login with 1045 "authentication failed"; its text reaches
// the log, the store's password hidden, and never the client.
func TestAGateThatFailsTellsTheClientNothingOfIt(t *testing.T) {
	failure := errors.New("policy store postgres://qf:s3cretpw@10.9.8.7/policy: connection refused")
	gate := &frontendtest.RecordingGate{Refuse: map[string]error{"bob": failure}, RefuseVerified: map[string]error{"alice": failure}}
	backend := frontendtest.NewBackend(withDatabaseTest(frontendtest.AllTypesEngine()))
	for _, method := range []string{gomysql.AUTH_NATIVE_PASSWORD, gomysql.AUTH_CACHING_SHA2_PASSWORD} {
		var log logbuf.Buffer
		addr := startServer(t, backend, Options{Gate: gate, Users: StaticUsers{"alice": "pw", "bob": "pw"}, AuthMethod: method,
			TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t)), Logger: slog.New(slog.NewTextHandler(&log, nil))})
		for _, user := range []string{"bob", "alice"} { // refused at Admit, at Verified
			err := openDB(t, addr, user, "pw", "", "tls=skip-verify").Ping()
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1045 || me.Message != "authentication failed" {
				t.Errorf("%s, %s, the Gate failing: %v; want 1045 \"authentication failed\"", method, user, err)
			}
			if err != nil && (strings.Contains(err.Error(), "10.9.8.7") || strings.Contains(err.Error(), "s3cretpw")) {
				t.Errorf("%s, %s: the client was told the Gate's failure: %v", method, user, err)
			}
		}
		if got := log.String(); strings.Count(got, "10.9.8.7") < 2 || strings.Contains(got, "s3cretpw") {
			t.Errorf("%s: the log: %s; want the Gate's failure at each login, without the store's password", method, got)
		}
	}
}

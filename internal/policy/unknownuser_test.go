package policy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/policy"
)

// scramOnly is the end-to-end configuration with SCRAM users only and passwords refused over
// plain connections (the default): a PostgreSQL client may log in only by SCRAM.
func scramOnly(t *testing.T) *config.Config {
	cfg := e2eConfig(t)
	erin, err := policy.SCRAMHash("erin-Pw5", []byte("another-salt-16b"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	users := cfg.Settings.Security.Users[:1]
	cfg.Settings.Security.Users = append(users, config.User{Name: "erin", PasswordHash: erin, Roles: []string{"analyst"}})
	cfg.Settings.Security.AllowPlaintextPasswords = false
	return cfg
}

// An unknown name is refused exactly as a wrong password is: same SQLSTATE, same message
// (but for the name), after the same SCRAM exchange.
func TestPostgresUnknownUserLooksLikeAWrongPassword(t *testing.T) {
	s := startStack(t, scramOnly(t))
	pgErr := func(user, password string) *pgconn.PgError {
		t.Helper()
		_, err := runPostgres(t, s, user, password, "select 1")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: want a server error, got %v", user, err)
		}
		return pe
	}
	wrong := pgErr("alice", "not-her-password")
	for _, name := range []string{"mallory", "ALICE", "alice ", strings.Repeat("x", 5000)} {
		unknown := pgErr(name, "not-her-password")
		if unknown.Code != wrong.Code || unknown.Message != strings.Replace(wrong.Message, `"alice"`, fmt.Sprintf("%q", name), 1) {
			t.Errorf("unknown %.20q: %s %q; a wrong password: %s %q", name, unknown.Code, unknown.Message, wrong.Code, wrong.Message)
		}
	}
	if wrong.Code != "28P01" {
		t.Errorf("wrong password: %s %s", wrong.Code, wrong.Message)
	}

	// The exchange itself: an unknown user's salt is as long as a real one, has the same
	// iteration count, and stays the same between attempts (a fresh one would give it away).
	alice := serverFirst(t, s.pg, "alice")
	m1, m2 := serverFirst(t, s.pg, "mallory"), serverFirst(t, s.pg, "mallory")
	trudy := serverFirst(t, s.pg, "trudy")
	if m1.salt != m2.salt || m1.iterations != m2.iterations {
		t.Errorf("mallory's salt changed between attempts: %+v then %+v", m1, m2)
	}
	if m1.salt == trudy.salt {
		t.Errorf("two unknown users share the salt %s", m1.salt)
	}
	if len(m1.salt) != len(alice.salt) || m1.iterations != alice.iterations {
		t.Errorf("unknown user's salt/iterations %+v do not look like a real user's %+v", m1, alice)
	}
}

var clientPort = regexp.MustCompile(`:[0-9]+'`)

type scramFirst struct{ salt, iterations string }

// serverFirst starts a login as user and returns the salt and iteration count of the
// server-first-message (pgproto3 as the client: pgx hides the exchange).
func serverFirst(t *testing.T, addr, user string) scramFirst {
	t.Helper()
	fe, msg := startLogin(t, addr, user)
	if sasl, ok := msg.(*pgproto3.AuthenticationSASL); !ok || len(sasl.AuthMechanisms) != 1 || sasl.AuthMechanisms[0] != "SCRAM-SHA-256" {
		t.Fatalf("%s: want SCRAM-SHA-256, the server asked %#v", user, msg)
	}
	fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=clientnonce0123456789")})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		t.Fatalf("%s: want SASLContinue, got %#v", user, msg)
	}
	var out scramFirst
	for _, attr := range strings.Split(string(cont.Data), ",") {
		if v, ok := strings.CutPrefix(attr, "s="); ok {
			out.salt = v
		}
		if v, ok := strings.CutPrefix(attr, "i="); ok {
			out.iterations = v
		}
	}
	return out
}

// On MySQL wire an unknown name gets the known names' answer, with or without a password.
func TestMySQLUnknownUserLooksLikeAWrongPassword(t *testing.T) {
	s := startStack(t, e2eConfig(t))
	for _, pw := range []string{"", "not-his-password"} {
		_, wrong := runMySQL(t, s, "carol", pw, "select 1")
		for _, name := range []string{"mallory", "CAROL"} {
			_, unknown := runMySQL(t, s, name, pw, "select 1")
			// The client's port differs between connections.
			if wrong == nil || unknown == nil || clientPort.ReplaceAllString(unknown.Error(), "") !=
				clientPort.ReplaceAllString(strings.Replace(wrong.Error(), "'carol'", "'"+name+"'", 1), "") {
				t.Errorf("password %q: unknown %s: %v; a wrong password: %v", pw, name, unknown, wrong)
			}
		}
	}
}

// A user with requireTLS logging in unencrypted is refused only once the password is right:
// a wrong password gets the answer an unknown name gets, so the TLS refusal tells only a
// client that knows the password that the user exists. On every protocol, with users of
// every hash form (SCRAM and bcrypt on PostgreSQL wire, native on MySQL wire).
func TestUserRequireTLSDoesNotTellWhoExists(t *testing.T) {
	cfg := e2eConfig(t)
	for i := range cfg.Settings.Security.Users {
		cfg.Settings.Security.Users[i].RequireTLS = true
	}
	s := startStack(t, cfg)
	const wrongPW = "not-the-password"
	pgAnswer := func(user, pw string) string {
		_, err := runPostgres(t, s, user, pw, "select 1")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("postgres %s: want a server error, got %v", user, err)
		}
		return pe.Code + " " + pe.Message
	}
	myAnswer := func(user, pw string) string {
		_, err := runMySQL(t, s, user, pw, "select 1")
		if err == nil {
			t.Fatalf("mysql %s logged in", user)
		}
		return clientPort.ReplaceAllString(err.Error(), "")
	}
	flightAnswer := func(user, pw string) string {
		_, err := runFlight(t, s, user, pw, "select 1")
		if err == nil {
			t.Fatalf("flight %s logged in", user)
		}
		return err.Error()
	}
	trinoAnswer := func(user, pw string) string { // plain http: the listener takes both
		req, err := http.NewRequest("POST", "http://"+s.trino+"/v1/statement", strings.NewReader("select 1"))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pw)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		protocol, user, pw string
		answer             func(user, pw string) string
	}{
		{"postgres", "alice", alicePW, pgAnswer}, // SCRAM
		{"postgres", "bob", bobPW, pgAnswer},     // bcrypt: a cleartext password
		{"mysql", "carol", carolPW, myAnswer},
		{"flightsql", "carol", carolPW, flightAnswer},
		{"trino", "alice", alicePW, trinoAnswer},
	} {
		right := tc.answer(tc.user, tc.pw)
		if !strings.Contains(right, "this user must connect with TLS") {
			t.Errorf("%s %s, right password: %q, want the TLS refusal", tc.protocol, tc.user, right)
		}
		wrong, unknown := tc.answer(tc.user, wrongPW), tc.answer("mallory", wrongPW)
		if strings.Contains(wrong, "TLS") || strings.ReplaceAll(wrong, tc.user, "mallory") != unknown {
			t.Errorf("%s %s, wrong password: %q; unknown name: %q", tc.protocol, tc.user, wrong, unknown)
		}
	}
}

// With users of mixed hash forms, an unknown name on PostgreSQL wire gets the exchange of the
// most common form, and a SCRAM exchange the iteration count most SCRAM users have, even when
// a user with a rare one sorts first.
func TestPostgresUnknownUserLooksLikeTheCommonForm(t *testing.T) {
	cfg := scramOnly(t) // alice and erin: SCRAM, 4096 iterations
	aaron, err := policy.SCRAMHash("aaron-Pw7", []byte("aaron-salt-16byt"), 10000)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte(bobPW), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Settings.Security.Users = append(cfg.Settings.Security.Users,
		config.User{Name: "aaron", PasswordHash: aaron}, config.User{Name: "bob", PasswordHash: string(bc)})
	cfg.Settings.Security.AllowPlaintextPasswords = true // so bob is asked for his password
	s := startStack(t, cfg)
	if got := firstAuth(t, s.pg, "bob"); got != "cleartext" {
		t.Fatalf("bob (bcrypt): %s", got)
	}
	if got := firstAuth(t, s.pg, "mallory"); got != "SCRAM-SHA-256" {
		t.Fatalf("unknown name among mostly SCRAM users: %s", got)
	}
	if m, a := serverFirst(t, s.pg, "mallory"), serverFirst(t, s.pg, "alice"); m.iterations != a.iterations || m.iterations != "4096" {
		t.Errorf("unknown name: %s iterations; most users have %s (aaron 10000)", m.iterations, a.iterations)
	}

	// Mostly mysql_native_password users (carol, dave), which PostgreSQL wire asks for a
	// cleartext password: so is an unknown name.
	s = startStack(t, e2eConfig(t))
	for _, user := range []string{"carol", "mallory"} {
		if got := firstAuth(t, s.pg, user); got != "cleartext" {
			t.Errorf("%s among mostly native users: %s", user, got)
		}
	}
}

// startLogin sends addr a StartupMessage for user on database demo and returns the client
// (its connection closes when the test ends) and the server's first answer.
func startLogin(t *testing.T, addr, user string) (*pgproto3.Frontend, pgproto3.BackendMessage) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user, "database": "demo"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	return fe, msg
}

// firstAuth starts a login as user and names the authentication the server asks for.
func firstAuth(t *testing.T, addr, user string) string {
	t.Helper()
	_, msg := startLogin(t, addr, user)
	switch m := msg.(type) {
	case *pgproto3.AuthenticationSASL:
		return strings.Join(m.AuthMechanisms, ",")
	case *pgproto3.AuthenticationCleartextPassword:
		return "cleartext"
	}
	return fmt.Sprintf("%T", msg)
}

package querynode

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
)

func TestUsersFollowTheActiveConfiguration(t *testing.T) {
	scram, err := pgwire.NewSCRAMVerifier("s3cret", []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte("hunter2"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var u users
	if _, ok := u.SCRAMVerifier("alice"); ok || u.CheckPassword("bob", "hunter2") {
		t.Fatal("before any configuration nobody logs in with a password")
	}
	cfg := &config.Config{}
	cfg.Settings.Security.Users = []config.User{
		{Name: "alice", PasswordHash: scram}, {Name: "bob", PasswordHash: string(bc)}, {Name: "carol", PasswordHash: "*0123456789ABCDEF0123456789ABCDEF01234567"},
	}
	u.set(cfg)
	if v, ok := u.SCRAMVerifier("alice"); !ok || v != scram {
		t.Fatalf("alice's SCRAM verifier: %q %v", v, ok)
	}
	if _, ok := u.SCRAMVerifier("bob"); ok {
		t.Fatal("bob has a bcrypt hash, not a SCRAM verifier")
	}
	if !u.CheckPassword("bob", "hunter2") || u.CheckPassword("bob", "hunter3") {
		t.Fatal("bob's bcrypt password check is wrong")
	}
	if u.CheckPassword("carol", "anything") || u.CheckPassword("alice", "s3cret") || u.CheckPassword("nobody", "") {
		t.Fatal("only bcrypt hashes take cleartext passwords")
	}
	u.set(&config.Config{})
	if u.CheckPassword("bob", "hunter2") {
		t.Fatal("a user removed from the configuration still logs in")
	}
}

func TestLoginLoopbackOrPassword(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("hunter2"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var u users
	cfg := &config.Config{}
	cfg.Settings.Security.Users = []config.User{{Name: "bob", PasswordHash: string(bc)}}
	u.set(cfg)
	for _, c := range []struct {
		user, password, token, addr string
		ok                          bool
	}{
		{"anyone", "", "", "127.0.0.1:5000", true},
		{"anyone", "", "", "[::1]:5000", true},
		{"anyone", "", "", "10.1.2.3:5000", false},
		{"bob", "hunter2", "", "10.1.2.3:5000", true},
		{"bob", "wr0ngpw", "", "10.1.2.3:5000", false},
		{"bob", "wr0ngpw", "", "127.0.0.1:5000", false}, // a wrong password fails even on loopback
		{"bob", "", "tok", "127.0.0.1:5000", false},
		{"", "hunter2", "", "10.1.2.3:5000", false},
	} {
		user, err := u.login(c.user, c.password, c.token, c.addr)
		if (err == nil) != c.ok || (c.ok && user != c.user) {
			t.Errorf("login(%q, password set %v, token set %v, %s) = %q, %v; want ok %v", c.user, c.password != "", c.token != "", c.addr, user, err, c.ok)
		}
		if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "wr0ngpw")) {
			t.Errorf("login error echoes the password: %v", err)
		}
	}
}

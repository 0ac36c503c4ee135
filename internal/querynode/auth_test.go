package querynode

import (
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

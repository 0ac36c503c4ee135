package querynode

import (
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
)

// users is the PostgreSQL frontend's password check over settings.security.users of the active
// configuration, swapped on every Apply. A user's passwordHash is a SCRAM-SHA-256 verifier
// (PostgreSQL's format: the client logs in with SCRAM) or a bcrypt hash (cleartext password
// over the connection, checked against it). mysql_native_password hashes ("*<hex>") cannot
// serve the PostgreSQL protocol and are ignored here.
type users struct {
	hashes atomic.Pointer[map[string]string]
}

func (u *users) set(cfg *config.Config) {
	m := make(map[string]string, len(cfg.Settings.Security.Users))
	for _, usr := range cfg.Settings.Security.Users {
		m[usr.Name] = usr.PasswordHash
	}
	u.hashes.Store(&m)
}

func (u *users) hash(user string) string {
	m := u.hashes.Load()
	if m == nil {
		return ""
	}
	return (*m)[user]
}

// SCRAMVerifier implements pgwire.Authenticator.
func (u *users) SCRAMVerifier(user string) (string, bool) {
	h := u.hash(user)
	return h, strings.HasPrefix(h, "SCRAM-SHA-256$")
}

// CheckPassword implements pgwire.Authenticator.
func (u *users) CheckPassword(user, password string) bool {
	h := u.hash(user)
	if !strings.HasPrefix(h, "$2") {
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(h), []byte(password)) == nil
}

package querynode

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
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

// errNeedPassword refuses a client that sent no password from beyond loopback.
var errNeedPassword = errors.New("a password is required: only loopback clients may connect without one")

// errBadLogin never says whether the user exists.
var errBadLogin = errors.New("wrong user name or password")

// login is the Trino HTTP and Flight SQL frontends' check: a password is checked against the
// user's bcrypt hash; without one, only a loopback client gets in (as the user it names).
func (u *users) login(user, password, token, clientAddr string) (string, error) {
	switch {
	case token != "":
		return "", errors.New("bearer tokens are not accepted: use a user name and password")
	case password != "":
		if user != "" && u.CheckPassword(user, password) {
			return user, nil
		}
		return "", errBadLogin
	case isLoopback(clientAddr):
		return user, nil
	}
	return "", errNeedPassword
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// trinoAuth adapts users to the Trino HTTP frontend.
type trinoAuth struct{ u *users }

func (a trinoAuth) Authenticate(_ context.Context, c trinohttp.Credentials) (string, error) {
	return a.u.login(c.User, c.Password, c.Token, c.ClientAddr)
}

func (a trinoAuth) AuthenticateAnonymous(_ context.Context, c trinohttp.Credentials) (string, error) {
	return a.u.login(c.User, "", "", c.ClientAddr)
}

// flightAuth adapts users to the Flight SQL frontend.
type flightAuth struct{ u *users }

func (a flightAuth) Authenticate(_ context.Context, c flightsql.Credentials) (string, error) {
	return a.u.login(c.User, c.Password, c.Token, c.ClientAddr)
}

func (a flightAuth) AuthenticateAnonymous(_ context.Context, c flightsql.Credentials) (string, error) {
	return a.u.login(c.User, "", "", c.ClientAddr)
}

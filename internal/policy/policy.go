// Package policy is who may do what: authentication of every frontend against
// settings.security.users (password hashes only), access control (settings.accessControl),
// guard scripts (settings.guardScripts) and SQL translation scripts (translation), all
// compiled from one configuration and swapped whole when a configuration is activated.
//
// It touches only its inputs: no clock, no I/O. Scripts run in internal/policy/starhost with a
// step limit. Passwords and hashes never appear in its errors, logs or metrics.
package policy

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/promreg"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/query"
)

// Policy holds the active Compiled policy. Before the first Activate nobody logs in with a
// password and every query passes Check. Safe for concurrent use.
type Policy struct {
	active   atomic.Pointer[Compiled]
	failures *prometheus.CounterVec

	// verified remembers cleartext logins that succeeded against the active configuration
	// (keyed by a SHA-256 of user, hash and password, never the password itself): Trino
	// clients send Basic credentials with every poll, and bcrypt or PBKDF2 on each would cost
	// milliseconds per request. Emptied on Activate, bounded by verifiedMax.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]struct{}
}

// verifiedMax bounds the login cache; when full it starts over.
const verifiedMax = 4096

// New returns a Policy with no configuration. Its metric queryflux_auth_failures_total
// {protocol} is registered on reg unless reg is nil.
func New(reg prometheus.Registerer) *Policy {
	return &Policy{failures: promreg.Once(reg, failuresKey{}, func() *prometheus.CounterVec { return newFailures(reg) })}
}

// failuresKey keys the failures counter on a shared registry (promreg.Once).
type failuresKey struct{}

func newFailures(reg prometheus.Registerer) *prometheus.CounterVec {
	failures := promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queryflux_auth_failures_total",
		Help: "Failed frontend logins, by protocol.",
	}, []string{"protocol"}))
	for _, proto := range []string{query.ProtocolPostgres, "mysql", query.ProtocolTrino, "flightsql"} {
		failures.WithLabelValues(proto)
	}
	return failures
}

// Activate makes c the policy of every later login and query.
func (p *Policy) Activate(c *Compiled) {
	if c == nil {
		panic("policy: Activate(nil)")
	}
	p.mu.Lock()
	p.active.Store(c)
	p.verified = nil
	p.mu.Unlock()
}

// Apply compiles cfg and activates it; on error the previous policy stays.
func (p *Policy) Apply(cfg *config.Config) error {
	c, err := Compile(cfg)
	if err != nil {
		return err
	}
	p.Activate(c)
	return nil
}

// Check is proxy.Options.Check over the active policy.
func (p *Policy) Check(req *query.Request, group string) error {
	c := p.active.Load()
	if c == nil {
		return nil
	}
	return c.Check(req, group)
}

func (p *Policy) user(name string) (config.User, bool) {
	c := p.active.Load()
	if c == nil {
		return config.User{}, false
	}
	u, ok := c.users[name]
	return u, ok
}

// checkPassword checks a cleartext password against name's hash, counting a failure.
func (p *Policy) checkPassword(protocol, name, password string) bool {
	if p.cleartextOK(name, password) {
		return true
	}
	p.failures.WithLabelValues(protocol).Inc()
	return false
}

// cleartextOK checks password against name's hash in the active configuration, remembering
// successes (see Policy.verified).
func (p *Policy) cleartextOK(name, password string) bool {
	c := p.active.Load()
	if c == nil {
		return false
	}
	u, ok := c.users[name]
	if !ok {
		CheckPassword(c.unknown.decoy, password) // the cost of a wrong password, not less
		return false
	}
	h := sha256.New()
	for _, part := range []string{u.Name, u.PasswordHash, password} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	p.mu.Lock()
	_, hit := p.verified[key]
	p.mu.Unlock()
	if hit {
		return true
	}
	if !CheckPassword(u.PasswordHash, password) {
		return false
	}
	p.mu.Lock()
	if p.active.Load() == c { // not if a new configuration came meanwhile
		if p.verified == nil || len(p.verified) >= verifiedMax {
			p.verified = map[[sha256.Size]byte]struct{}{}
		}
		p.verified[key] = struct{}{}
	}
	p.mu.Unlock()
	return true
}

// Admit is the query.Gate of every frontend: it refuses logins that settings.security says
// must be encrypted, trusts loopback clients when settings.security.trustLoopback is on (and
// no user is configured), and otherwise leaves the decision to the password.
func (p *Policy) Admit(l query.Login) (bool, error) {
	c := p.active.Load()
	if c == nil {
		return false, query.ErrNotConfigured
	}
	trusted, err := c.admit(l)
	if err != nil {
		p.failures.WithLabelValues(l.Protocol).Inc()
	}
	return trusted, err
}

func (c *Compiled) admit(l query.Login) (bool, error) {
	if c.requireTLS && !l.TLS {
		return false, Refusal("this server accepts only encrypted connections: connect with TLS")
	}
	_, known := c.users[l.User]
	if !known && c.trustLoopback && len(c.users) == 0 && l.User != "" && isLoopback(l.ClientAddr) {
		return true, nil
	}
	if l.Cleartext && !l.TLS && !c.allowPlaintext {
		return false, Refusal("a password is not accepted over an unencrypted connection: connect with TLS " +
			"(or set settings.security.allowPlaintextPasswords)")
	}
	return false, nil
}

// Verified refuses a user with requireTLS whose password was right but whose connection is
// not encrypted. It runs after the password so that the refusal, which names a configured
// user, only reaches a client that knows that user's password; the others get the answer of
// a wrong password or an unknown name. A cleartext password has then crossed the network, but
// only where settings.security.allowPlaintextPasswords lets it (Admit refuses it otherwise).
func (p *Policy) Verified(l query.Login) error {
	c := p.active.Load()
	if c == nil {
		return query.ErrNotConfigured
	}
	if u, known := c.users[l.User]; known && u.RequireTLS && !l.TLS {
		p.failures.WithLabelValues(l.Protocol).Inc()
		return Refusal("this user must connect with TLS")
	}
	return nil
}

// Refusal is a login refused before any password was checked, with the client's message.
func Refusal(msg string) error { return &query.Error{Code: query.CodeAuthRefused, Message: msg} }

// isLoopback reports whether addr (host:port, or a host alone) is a loopback address:
// net.ParseIP(host).IsLoopback() without its allocation (680 instructions of every Trino
// statement, whose every request logs in), a zone refused as net.ParseIP refuses it.
func isLoopback(addr string) bool {
	// A local client's address as the kernel names it, "127.0.0.1:port", without parsing: the
	// parse was ~550 instructions of every Trino statement's login. The rest after the colon
	// must be what SplitHostPort takes as a port (no colon or bracket), as below.
	const local = "127.0.0.1:"
	if len(addr) >= len(local) && addr[:len(local)] == local && plainPort(addr[len(local):]) {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// plainPort reports whether s has none of the bytes that make net.SplitHostPort refuse an
// address after its host ("127.0.0.1:" + s): a colon or a bracket.
func plainPort(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ':' || c == '[' || c == ']' {
			return false
		}
	}
	return true
}

var errAuth = errors.New("authentication failed")

// Postgres is the PostgreSQL frontend's Authenticator: SCRAM-SHA-256 for users with a SCRAM
// verifier, a cleartext password checked against any other hash form. Pass the Policy itself
// as the frontend's Gate.
func (p *Policy) Postgres() pgwire.Authenticator { return pgAuth{p} }

type pgAuth struct{ p *Policy }

func (a pgAuth) SCRAMVerifier(user string) (string, bool) {
	u, ok := a.p.user(user)
	if !ok || HashKind(u.PasswordHash) != HashSCRAM {
		return "", false
	}
	return u.PasswordHash, true
}

// MockSCRAMVerifier takes an unknown user through the SCRAM exchange a configured one gets,
// when most configured users have SCRAM verifiers (else through a cleartext password checked
// against a decoy hash, see cleartextOK).
func (a pgAuth) MockSCRAMVerifier(user string) (string, bool) {
	c := a.p.active.Load()
	if c == nil || !c.unknown.scram {
		return "", false
	}
	if _, known := c.users[user]; known {
		return "", false
	}
	u := c.unknown
	return pgwire.MockVerifier(u.secret, user, u.saltLen, u.iterations), true
}

func (a pgAuth) CheckPassword(user, password string) bool {
	// Counted in AuthFailed, which pgwire calls for every failure (SCRAM ones too).
	return a.p.cleartextOK(user, password)
}

func (a pgAuth) AuthFailed(string) { a.p.failures.WithLabelValues(query.ProtocolPostgres).Inc() }

// MySQL is the MySQL frontend's Users. Under mysql_native_password (the default) users with a
// "*<hex>" hash log in, the scramble checked against the hash; under caching_sha2_password
// every configured user logs in by full authentication (password over TLS or RSA-encrypted),
// checked against any hash form.
func (p *Policy) MySQL() mysqlwire.Users { return myAuth{p} }

type myAuth struct{ p *Policy }

func (a myAuth) Passwords(user string) ([]string, bool, error) {
	if _, ok := a.p.user(user); !ok {
		return nil, false, nil
	}
	return nil, true, nil // hash-only: CheckNativeScramble or CheckCleartext decides
}

func (a myAuth) CheckCleartext(user, password string) bool { return a.p.cleartextOK(user, password) }

func (a myAuth) CheckNativeScramble(user string, salt, scramble []byte) bool {
	u, ok := a.p.user(user)
	if !ok || HashKind(u.PasswordHash) != HashNative {
		return false
	}
	stage2, err := decodeNative(u.PasswordHash)
	return err == nil && CheckNativeScramble(stage2, salt, scramble)
}

func (a myAuth) AuthFailed(string) { a.p.failures.WithLabelValues("mysql").Inc() }

// Trino is the Trino frontend's Authenticator: HTTP Basic against any hash form. Bearer
// tokens are refused (the configuration holds none).
func (p *Policy) Trino() trinohttp.Authenticator { return trinoAuth{p} }

type trinoAuth struct{ p *Policy }

func (a trinoAuth) Authenticate(_ context.Context, c trinohttp.Credentials) (string, error) {
	if c.Token != "" || !a.p.checkPassword(query.ProtocolTrino, c.User, c.Password) {
		if c.Token != "" {
			a.p.failures.WithLabelValues(query.ProtocolTrino).Inc()
		}
		return "", errAuth
	}
	return c.User, nil
}

// FlightSQL is the Flight SQL frontend's Authenticator: Basic against any hash form (the
// server then issues its own bearer token).
func (p *Policy) FlightSQL() flightsql.Authenticator { return flightAuth{p} }

type flightAuth struct{ p *Policy }

func (a flightAuth) Authenticate(_ context.Context, c flightsql.Credentials) (string, error) {
	if c.Token != "" {
		a.p.failures.WithLabelValues("flightsql").Inc()
		return "", errAuth
	}
	if !a.p.checkPassword("flightsql", c.User, c.Password) {
		return "", errAuth
	}
	return c.User, nil
}

package frontendtest

import (
	"sync"

	"github.com/queryflux/queryflux/internal/query"
)

// RecordingGate is a login policy for tests: it trusts the users in Trust without a password,
// refuses those in Refuse at Admit and those in RefuseVerified once their password was found
// right, and records every login it is told of (a query.FailureGate too), so a test can check
// what each frontend tells a policy: the user, the client's address, TLS, a cleartext password.
type RecordingGate struct {
	Trust                   map[string]bool
	Refuse, RefuseVerified  map[string]error
	mu                      sync.Mutex
	admits, verifies, fails []query.Login
}

func (g *RecordingGate) Admit(l query.Login) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.admits = append(g.admits, l)
	if err := g.Refuse[l.User]; err != nil {
		return false, err
	}
	return g.Trust[l.User], nil
}

func (g *RecordingGate) Verified(l query.Login) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.verifies = append(g.verifies, l)
	return g.RefuseVerified[l.User]
}

func (g *RecordingGate) Failed(l query.Login) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails = append(g.fails, l)
}

// Reset returns the logins told to Admit, Verified and Failed since the last Reset, and
// forgets them.
func (g *RecordingGate) Reset() (admits, verifies, fails []query.Login) {
	g.mu.Lock()
	defer g.mu.Unlock()
	admits, verifies, fails = g.admits, g.verifies, g.fails
	g.admits, g.verifies, g.fails = nil, nil, nil
	return
}

// FailedLogins records the users an authenticator is told failed to log in (its AuthFailed),
// for a test to take: embedded beside a frontend's own users table.
type FailedLogins struct {
	mu     sync.Mutex
	failed []string
}

func (f *FailedLogins) AuthFailed(user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = append(f.failed, user)
}

// TakeFailed returns the users told so far, and forgets them.
func (f *FailedLogins) TakeFailed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	users := f.failed
	f.failed = nil
	return users
}

package loginlimit

import "github.com/queryflux/queryflux/internal/query"

// Gate is a query.Gate that asks the throttle before the gate it wraps, and reports every
// login's outcome to it.
type Gate struct {
	query.Gate
	Throttle *Throttle
}

// Admit refuses a throttled source before anything else is decided.
func (g Gate) Admit(l query.Login) (bool, error) {
	s, err := g.Throttle.begin(l)
	if err != nil {
		return false, err
	}
	trusted, err := g.Gate.Admit(l)
	if trusted || err != nil {
		g.Throttle.abandonedAt(s) // no password is checked
	}
	return trusted, err
}

// Verified ends a login whose password was right (a refusal here is not a guess).
func (g Gate) Verified(l query.Login) error {
	err := g.Gate.Verified(l)
	g.Throttle.Succeeded(l)
	return err
}

// Failed counts a wrong password against the login's source and user name.
func (g Gate) Failed(l query.Login) {
	g.Throttle.Failed(l)
	query.LoginFailed(g.Gate, l)
}

package query

import (
	"errors"

	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Login is what a frontend knows about a login before it checks any password: who asks, from
// where, over what, and whether the password would travel as it is (PostgreSQL's cleartext
// password message, HTTP or Flight SQL Basic) rather than as a challenge response.
type Login struct {
	Protocol   string
	User       string
	ClientAddr string
	TLS        bool
	Cleartext  bool
}

// Gate decides a login before its password: trusted lets the client in without checking any
// password (loopback trust); otherwise the frontend goes on to check one, and once the
// password is found right asks Verified, which decides by the user's own rules (a user's
// requireTLS): refused before the password, such a login would tell any client that the user
// exists. A refusal is a *Error with code CodeAuthRefused whose message the client sees (it
// never names a secret).
type Gate interface {
	Admit(l Login) (trusted bool, err error)
	Verified(l Login) error
}

// CodeAuthRefused is the SQLSTATE of a login the Gate refused
// (invalid_authorization_specification).
const CodeAuthRefused = sqlstate.InvalidAuthorizationSpecification

// FailureGate is an optional extension of Gate told of every login whose password (or token)
// was found wrong, with what Admit was told: a throttle counts them by source.
type FailureGate interface {
	Failed(l Login)
}

// LoginFailed tells g, if it wants to know, that l's password was wrong.
func LoginFailed(g Gate, l Login) {
	if f, ok := g.(FailureGate); ok {
		f.Failed(l)
	}
}

// GateRefusal is what the client of a login the Gate refused with err is told. A *Error is a
// refusal the Gate wrote for clients and is theirs as it is. Any other error is the Gate
// failing, whose text (a file, an address, a store's message) is for the operator: the client
// gets "authentication failed" and failed is true, so the frontend logs err.
func GateRefusal(err error) (refusal *Error, failed bool) {
	var qe *Error
	if errors.As(err, &qe) {
		return qe, false
	}
	return &Error{Code: CodeAuthRefused, Message: "authentication failed"}, true
}

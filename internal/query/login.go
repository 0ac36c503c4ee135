package query

import (
	"errors"
	"fmt"

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

// UserNameRefused is the refusal of a login whose user name holds a control character: a
// NUL, any other C0 character, DEL or a C1 character. No PostgreSQL or MySQL user name can
// be sent holding a NUL, and none of them is a name an operator wrote: a user named with one
// would be listed, logged and matched against policies apart from the name it looks like
// (in a terminal, a log line or a page, "a\x00b" and "ab", or "alice\n" and "alice", read
// alike). Every frontend refuses such a name before any Gate, password or token check; nil
// for a name without one. The message names the character and its byte offset, not the
// name, which may be long.
func UserNameRefused(user string) *Error {
	for i, r := range user {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return &Error{Code: CodeAuthRefused,
				Message: fmt.Sprintf("the user name holds a control character (U+%04X at byte %d): user names may not", r, i)}
		}
	}
	return nil
}

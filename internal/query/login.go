package query

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
// password (loopback trust); otherwise the frontend goes on to check one. A refusal is a
// *Error with code CodeAuthRefused whose message the client sees (it never names a secret).
type Gate interface {
	Admit(l Login) (trusted bool, err error)
}

// CodeAuthRefused is the SQLSTATE of a login refused before its password was checked
// (invalid_authorization_specification).
const CodeAuthRefused = "28000"

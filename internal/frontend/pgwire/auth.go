package pgwire

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Authenticator decides who may log in with a password. Implementations must be safe for
// concurrent use; a policy engine may extend this with more methods through its own type.
type Authenticator interface {
	// SCRAMVerifier returns user's stored SCRAM-SHA-256 verifier in PostgreSQL's form
	// "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>" (base64 parts), and ok=false
	// when the user has none, in which case the client is asked for a cleartext password.
	SCRAMVerifier(user string) (verifier string, ok bool)
	// CheckPassword reports whether password is user's.
	CheckPassword(user, password string) bool
}

// UnknownUsers is an optional extension of Authenticator for users that do not exist. When
// MockSCRAMVerifier answers ok, such a user is taken through a SCRAM-SHA-256 exchange against
// that verifier, which always fails with the same message as a wrong password, so a client
// cannot tell unknown names from known ones. The verifier must be the same on every call for
// one user (a salt that changed between attempts would give the mock away): MockVerifier
// derives one from a server secret.
type UnknownUsers interface {
	MockSCRAMVerifier(user string) (verifier string, ok bool)
}

// MockVerifier is a SCRAM-SHA-256 verifier for an unknown user, a pure function of secret and
// user: its salt (saltLen bytes) and keys look like a real verifier's, and no password
// matches it (its StoredKey is an HMAC output, not the hash of a client key).
func MockVerifier(secret []byte, user string, saltLen, iterations int) string {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(label))
		m.Write([]byte{0})
		m.Write([]byte(user))
		return m.Sum(nil)
	}
	salt := derive("salt")
	for len(salt) < saltLen {
		salt = append(salt, derive("salt"+strconv.Itoa(len(salt)))...)
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt[:saltLen]), b64(derive("stored")), b64(derive("server")))
}

// FailureObserver is an optional extension of Authenticator told of every failed login.
type FailureObserver interface {
	AuthFailed(user string)
}

// StaticUsers is an Authenticator over a fixed user -> password table.
type StaticUsers struct {
	passwords map[string]string
	verifiers map[string]string
	secret    []byte // of unknown users' mock verifiers (with scram)
}

// NewStaticUsers returns an Authenticator for passwords. With scram true every user logs in
// with SCRAM-SHA-256 (verifiers are computed now); otherwise with a cleartext password.
func NewStaticUsers(passwords map[string]string, scram bool) *StaticUsers {
	s := &StaticUsers{passwords: map[string]string{}, verifiers: map[string]string{}}
	if scram {
		s.secret = make([]byte, 32)
		_, _ = rand.Read(s.secret)
	}
	for user, pw := range passwords {
		s.passwords[user] = pw
		if scram {
			var salt [16]byte
			_, _ = rand.Read(salt[:])
			v, err := NewSCRAMVerifier(pw, salt[:], 4096)
			if err != nil {
				panic("pgwire: SCRAM verifier: " + err.Error())
			}
			s.verifiers[user] = v
		}
	}
	return s
}

func (s *StaticUsers) SCRAMVerifier(user string) (string, bool) {
	v, ok := s.verifiers[user]
	return v, ok
}

func (s *StaticUsers) MockSCRAMVerifier(user string) (string, bool) {
	if s.secret == nil {
		return "", false
	}
	return MockVerifier(s.secret, user, 16, 4096), true
}

func (s *StaticUsers) CheckPassword(user, password string) bool {
	pw, ok := s.passwords[user]
	return ok && subtle.ConstantTimeCompare([]byte(pw), []byte(password)) == 1
}

// NewSCRAMVerifier computes the SCRAM-SHA-256 verifier PostgreSQL stores for password.
func NewSCRAMVerifier(password string, salt []byte, iterations int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(storedKey[:]), b64(serverKey)), nil
}

type scramVerifier struct {
	iterations int
	salt       []byte
	storedKey  []byte
	serverKey  []byte
}

func parseSCRAMVerifier(v string) (*scramVerifier, error) {
	bad := errors.New("malformed SCRAM-SHA-256 verifier")
	method, rest, ok := strings.Cut(v, "$")
	if !ok || method != "SCRAM-SHA-256" {
		return nil, bad
	}
	iterSalt, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return nil, bad
	}
	iterStr, saltStr, ok1 := strings.Cut(iterSalt, ":")
	storedStr, serverStr, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return nil, bad
	}
	iter, err := strconv.Atoi(iterStr)
	if err != nil || iter <= 0 {
		return nil, bad
	}
	dec := base64.StdEncoding.DecodeString
	salt, e1 := dec(saltStr)
	stored, e2 := dec(storedStr)
	server, e3 := dec(serverStr)
	if e1 != nil || e2 != nil || e3 != nil || len(stored) != sha256.Size || len(server) != sha256.Size {
		return nil, bad
	}
	return &scramVerifier{iterations: iter, salt: salt, storedKey: stored, serverKey: server}, nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramServer is the server side of one SCRAM-SHA-256 exchange (RFC 5802/7677, without
// channel binding), as a small state machine: first() then final().
type scramServer struct {
	v               *scramVerifier
	clientFirstBare string
	serverFirst     string
	gs2Header       string
	nonce           string
}

// first takes the client-first-message and returns the server-first-message.
func (s *scramServer) first(clientFirst string) (string, error) {
	// gs2-header: "n,," or "y,," (client supports binding, we do not offer it); "p=" is refused.
	var bare string
	switch {
	case strings.HasPrefix(clientFirst, "n,") || strings.HasPrefix(clientFirst, "y,"):
		i := strings.Index(clientFirst[2:], ",")
		if i < 0 {
			return "", errors.New("SCRAM: malformed client-first-message")
		}
		s.gs2Header = clientFirst[:2+i+1]
		bare = clientFirst[2+i+1:]
	case strings.HasPrefix(clientFirst, "p="):
		return "", errors.New("SCRAM: channel binding is not supported")
	default:
		return "", errors.New("SCRAM: malformed client-first-message")
	}
	var clientNonce string
	for _, attr := range strings.Split(bare, ",") {
		if strings.HasPrefix(attr, "r=") {
			clientNonce = attr[2:]
		}
	}
	if clientNonce == "" {
		return "", errors.New("SCRAM: client nonce missing")
	}
	var raw [18]byte
	_, _ = rand.Read(raw[:])
	s.clientFirstBare = bare
	s.nonce = clientNonce + base64.StdEncoding.EncodeToString(raw[:])
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(s.v.salt), s.v.iterations)
	return s.serverFirst, nil
}

// final checks the client-final-message's proof and returns the server-final-message.
func (s *scramServer) final(clientFinal string) (string, error) {
	idx := strings.LastIndex(clientFinal, ",p=")
	if idx < 0 {
		return "", errors.New("SCRAM: proof missing")
	}
	withoutProof := clientFinal[:idx]
	proof, err := base64.StdEncoding.DecodeString(clientFinal[idx+3:])
	if err != nil || len(proof) != sha256.Size {
		return "", errors.New("SCRAM: malformed proof")
	}
	var channel, nonce string
	for _, attr := range strings.Split(withoutProof, ",") {
		switch {
		case strings.HasPrefix(attr, "c="):
			channel = attr[2:]
		case strings.HasPrefix(attr, "r="):
			nonce = attr[2:]
		}
	}
	if channel != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return "", errors.New("SCRAM: channel binding mismatch")
	}
	if nonce != s.nonce {
		return "", errors.New("SCRAM: nonce mismatch")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSig := hmacSHA256(s.v.storedKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	sum := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(sum[:], s.v.storedKey) != 1 {
		return "", errAuthFailed
	}
	serverSig := hmacSHA256(s.v.serverKey, authMessage)
	return "v=" + base64.StdEncoding.EncodeToString(serverSig), nil
}

var errAuthFailed = errors.New("password authentication failed")

package mysqlwire

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"slices"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// ScrambleChecker is an optional extension of Users for users stored only as a
// mysql_native_password hash (SHA1(SHA1(pw))), never as a cleartext password. Passwords
// returns found=true and no passwords for such a user; the mysql_native_password response is
// then checked with it against the connection's salt.
type ScrambleChecker interface {
	CheckNativeScramble(user string, salt, scramble []byte) bool
}

// CleartextChecker is an optional extension of Users for hash-only users under
// caching_sha2_password: the server always asks for full authentication, receives the password
// over TLS or RSA-encrypted with its key, and checks it here against whatever hash it holds.
type CleartextChecker interface {
	CheckCleartext(user, password string) bool
}

// FailureObserver is an optional extension of Users told of every login refused for its
// password (metrics); a login the Gate refused is the Gate's to count.
type FailureObserver interface {
	AuthFailed(user string)
}

// authProvider checks every login: the Gate (or the LoopbackUser rule) first, then the
// password, whichever plugin carried it. Every user name reaches it (see GetCredential), so an
// unknown user is refused like a wrong password, and a trusted user may send any password.
type authProvider struct {
	server.DefaultAuthenticationProvider // Validate
	s                                    *Server
	key                                  *rsa.PrivateKey // caching_sha2 full authentication without TLS
}

func (p *authProvider) Authenticate(c *server.Conn, plugin string, data []byte) error {
	user := c.GetUser()
	secure := isSecure(c)
	trusted, err := p.s.admit(user, c.RemoteAddr(), secure)
	if err != nil || trusted {
		return err
	}
	if err := p.checkPassword(c, connSalt(c), user, plugin, data); err != nil {
		if errors.Is(err, server.ErrAccessDenied) {
			p.s.passwordFailed(user, c.RemoteAddr(), secure)
		}
		return err
	}
	return p.s.verified(user, c.RemoteAddr(), secure)
}

// checkPassword checks the password data carries under plugin, scrambled with salt (nil if it
// could not be read: every password is then wrong); nil when it is right.
func (p *authProvider) checkPassword(c *server.Conn, salt []byte, user, plugin string, data []byte) error {
	users := p.s.opts.Users
	if users == nil {
		return server.ErrAccessDenied
	}
	// An unknown name goes on with no password at all, through the same steps and answers as
	// a wrong password (the checkers refuse it), so a client cannot tell which names exist.
	passwords, found, err := users.Passwords(user)
	if err != nil {
		return server.ErrAccessDenied
	}
	if !found {
		passwords = nil
	}
	if isEmptyPassword(data) {
		if slices.Contains(passwords, "") {
			return nil
		}
		return server.ErrAccessDeniedNoPassword
	}
	switch plugin {
	case mysql.AUTH_NATIVE_PASSWORD:
		if salt == nil {
			return server.ErrAccessDenied
		}
		if sc, ok := users.(ScrambleChecker); ok && sc.CheckNativeScramble(user, salt, data) {
			return nil
		}
		for _, pw := range passwords {
			if pw != "" && subtle.ConstantTimeCompare(mysql.CalcNativePassword(salt, []byte(pw)), data) == 1 {
				return nil
			}
		}
	case mysql.AUTH_CACHING_SHA2_PASSWORD:
		return p.fullAuth(c, salt, func(password string) bool {
			if cc, ok := users.(CleartextChecker); ok && cc.CheckCleartext(user, password) {
				return true
			}
			for _, pw := range passwords {
				if pw != "" && subtle.ConstantTimeCompare([]byte(pw), []byte(password)) == 1 {
					return true
				}
			}
			return false
		})
	}
	return server.ErrAccessDenied
}

// isSecure reports whether c runs over TLS (which its packet gate runs).
func isSecure(c *server.Conn) bool {
	s, ok := c.Conn.Conn.(secureConn)
	return ok && s.isSecure()
}

// isEmptyPassword: clients send no password as no bytes or a single NUL.
func isEmptyPassword(data []byte) bool { return len(data) == 0 || (len(data) == 1 && data[0] == 0) }

// fullAuth runs caching_sha2_password's full authentication (there is no cache to do the fast
// one against: only a hash is stored): "perform full authentication", then the password in
// clear over TLS, or RSA-OAEP encrypted with the server's key (sent on request) and XORed
// with the salt.
func (p *authProvider) fullAuth(c *server.Conn, salt []byte, check func(password string) bool) error {
	if err := c.WritePacket([]byte{0, 0, 0, 0, mysql.MORE_DATE_HEADER, mysql.CACHE_SHA2_FULL_AUTH}); err != nil {
		return err
	}
	data, err := c.ReadPacket()
	if err != nil {
		return err
	}
	var password []byte
	if isSecure(c) {
		password = data
	} else {
		if p.key == nil {
			return errors.New("caching_sha2_password without TLS needs the server's RSA key")
		}
		if len(data) == 1 && data[0] == 0x02 { // the client asks for the public key
			der, err := x509.MarshalPKIXPublicKey(&p.key.PublicKey)
			if err != nil {
				return err
			}
			pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
			if err := c.WritePacket(append([]byte{0, 0, 0, 0, mysql.MORE_DATE_HEADER}, pub...)); err != nil {
				return err
			}
			if data, err = c.ReadPacket(); err != nil {
				return err
			}
		}
		plain, err := rsa.DecryptOAEP(sha1.New(), rand.Reader, p.key, data, nil)
		if err != nil || salt == nil {
			return server.ErrAccessDenied
		}
		password = mysql.Xor(plain, salt)
	}
	if n := len(password); n > 0 && password[n-1] == 0 {
		password = password[:n-1]
	}
	if !check(string(password)) {
		return server.ErrAccessDenied
	}
	return nil
}

// connSalt is the connection's current scramble salt, as the greeting or the latest auth
// switch sent it (login.go); nil if it could not be read, and hash-only users then fail to
// log in, they are never let in.
func connSalt(c *server.Conn) []byte {
	fc, ok := c.Conn.Conn.(*flushOnReadConn)
	if !ok || fc.login == nil || len(fc.login.salt) != 20 {
		return nil
	}
	return fc.login.salt
}

// unusablePassword stands in every credential: go-mysql needs a non-empty password list to
// reach the auth provider, which decides; nobody can guess this one.
var unusablePassword = func() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

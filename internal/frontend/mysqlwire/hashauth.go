package mysqlwire

import (
	"crypto/rand"
	"encoding/hex"
	"reflect"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// ScrambleChecker is an optional extension of Users for users stored only as a
// mysql_native_password hash (SHA1(SHA1(pw))), never as a cleartext password. Passwords
// returns found=true and no passwords for such a user; the mysql_native_password response is
// then checked here against the connection's salt.
type ScrambleChecker interface {
	CheckNativeScramble(user string, salt, scramble []byte) bool
}

// FailureObserver is an optional extension of Users told of every failed login (metrics).
type FailureObserver interface {
	AuthFailed(user string)
}

// scrambleProvider checks mysql_native_password responses with a ScrambleChecker first and
// falls back to go-mysql's checks against cleartext passwords (the loopback user's "").
type scrambleProvider struct {
	server.DefaultAuthenticationProvider
	check ScrambleChecker
}

func (p *scrambleProvider) Authenticate(c *server.Conn, plugin string, data []byte) error {
	if plugin == mysql.AUTH_NATIVE_PASSWORD && len(data) > 1 {
		if salt := connSalt(c); salt != nil && p.check.CheckNativeScramble(c.GetUser(), salt, data) {
			return nil
		}
	}
	return p.DefaultAuthenticationProvider.Authenticate(c, plugin, data)
}

// connSalt reads the connection's current scramble salt, which go-mysql v1.16 keeps in the
// unexported field Conn.salt (refreshed on an auth switch). nil if the field is not there
// (a go-mysql upgrade): hash-only users then fail to log in, they are never let in.
// TestConnSaltIsReadable guards this.
func connSalt(c *server.Conn) []byte {
	f := reflect.ValueOf(c).Elem().FieldByName("salt")
	if !f.IsValid() || f.Type() != reflect.TypeFor[[]byte]() {
		return nil
	}
	salt := *(*[]byte)(unsafe.Pointer(f.UnsafeAddr()))
	if len(salt) != 20 {
		return nil
	}
	return append([]byte(nil), salt...)
}

// unusablePassword stands in the credential of a hash-only user: go-mysql needs a non-empty
// password list to reach the auth provider, and nobody can guess this one.
var unusablePassword = func() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

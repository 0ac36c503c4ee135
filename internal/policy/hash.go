package policy

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Hash forms a user's passwordHash may take (one per user; config validation enforces it):
//
//	SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>  PostgreSQL's verifier
//	*<40 hex>                                             mysql_native_password: SHA1(SHA1(pw))
//	$2a$/$2b$/$2y$...                                     bcrypt
//
// Which protocol accepts which form:
//
//	PostgreSQL  SCRAM: SCRAM-SHA-256 exchange; the others: cleartext password (use TLS)
//	MySQL       mysql_native_password (the default the server announces; clients that start
//	            with caching_sha2_password are switched to it): *hex only, the scramble checked
//	            against the hash. With mysqlwire.Options.AuthMethod caching_sha2_password: any
//	            form, by full authentication (password over TLS, or RSA-encrypted), since the
//	            fast path would need an unsalted SHA256(SHA256(pw)) that config never holds.
//	Trino       any form: HTTP Basic (use TLS)
//	Flight SQL  any form: Basic (handshake or per call), then the bearer token it issues
const (
	HashSCRAM  = "scram-sha-256"
	HashNative = "mysql_native_password"
	HashBcrypt = "bcrypt"
)

// HashKind names the form of h, or "" when it is none of them.
func HashKind(h string) string {
	switch {
	case strings.HasPrefix(h, "SCRAM-SHA-256$"):
		return HashSCRAM
	case len(h) == 41 && h[0] == '*':
		return HashNative
	case strings.HasPrefix(h, "$2"):
		return HashBcrypt
	}
	return ""
}

// CheckPassword reports whether password matches hash, whatever its form. Constant time in the
// password for SCRAM and native hashes; bcrypt is bcrypt.
func CheckPassword(hash, password string) bool {
	switch HashKind(hash) {
	case HashSCRAM:
		v, err := parseSCRAM(hash)
		if err != nil {
			return false
		}
		salted, err := pbkdf2.Key(sha256.New, password, v.salt, v.iterations, sha256.Size)
		if err != nil {
			return false
		}
		stored := sha256.Sum256(hmacSHA256(salted, "Client Key"))
		return subtle.ConstantTimeCompare(stored[:], v.storedKey) == 1
	case HashNative:
		want, err := hex.DecodeString(hash[1:])
		if err != nil {
			return false
		}
		got := NativeStage2(password)
		return subtle.ConstantTimeCompare(got[:], want) == 1
	case HashBcrypt:
		return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
	}
	return false
}

// NativeStage2 is SHA1(SHA1(password)), what mysql_native_password stores.
func NativeStage2(password string) [sha1.Size]byte {
	s1 := sha1.Sum([]byte(password))
	return sha1.Sum(s1[:])
}

// NativeHash is password's mysql_native_password hash "*<40 HEX>".
func NativeHash(password string) string {
	s2 := NativeStage2(password)
	return "*" + strings.ToUpper(hex.EncodeToString(s2[:]))
}

// CheckNativeScramble reports whether auth is the mysql_native_password response to salt for
// the password whose stage-2 hash is stage2: auth = SHA1(pw) XOR SHA1(salt + stage2), so
// SHA1(auth XOR SHA1(salt + stage2)) must equal stage2.
func CheckNativeScramble(stage2, salt, auth []byte) bool {
	if len(auth) != sha1.Size || len(stage2) != sha1.Size {
		return false
	}
	h := sha1.New()
	h.Write(salt)
	h.Write(stage2)
	mix := h.Sum(nil)
	stage1 := make([]byte, sha1.Size)
	for i := range stage1 {
		stage1[i] = auth[i] ^ mix[i]
	}
	got := sha1.Sum(stage1)
	return subtle.ConstantTimeCompare(got[:], stage2) == 1
}

// SCRAMHash is PostgreSQL's SCRAM-SHA-256 verifier of password with salt and iterations.
func SCRAMHash(password string, salt []byte, iterations int) (string, error) {
	if iterations < 1 {
		return "", fmt.Errorf("SCRAM-SHA-256 iterations %d: must be at least 1", iterations)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	stored := sha256.Sum256(hmacSHA256(salted, "Client Key"))
	server := hmacSHA256(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(server)), nil
}

type scramVerifier struct {
	iterations int
	salt       []byte
	storedKey  []byte
}

func parseSCRAM(v string) (*scramVerifier, error) {
	bad := fmt.Errorf("malformed SCRAM-SHA-256 verifier")
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return nil, bad
	}
	iterSalt, keys, ok := strings.Cut(rest, "$")
	iterStr, saltStr, ok1 := strings.Cut(iterSalt, ":")
	storedStr, _, ok2 := strings.Cut(keys, ":")
	if !ok || !ok1 || !ok2 {
		return nil, bad
	}
	iter, err := strconv.Atoi(iterStr)
	if err != nil || iter <= 0 {
		return nil, bad
	}
	salt, e1 := base64.StdEncoding.DecodeString(saltStr)
	stored, e2 := base64.StdEncoding.DecodeString(storedStr)
	if e1 != nil || e2 != nil || len(stored) != sha256.Size {
		return nil, bad
	}
	return &scramVerifier{iterations: iter, salt: salt, storedKey: stored}, nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func decodeNative(h string) ([]byte, error) {
	if HashKind(h) != HashNative {
		return nil, fmt.Errorf("not a mysql_native_password hash")
	}
	return hex.DecodeString(h[1:])
}

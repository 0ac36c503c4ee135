package pgconfig

// Secrets at rest: engine passwords and tokens, passwords written inside endpoints and
// credential options (config.IsSecretOption) are stored sealed with AES-256-GCM under the
// control plane's config key, as "qfenc:v1:<key id>:<base64 of nonce and ciphertext>". The key
// id (the first 8 bytes of the key's SHA-256, in hex) says which key sealed a value, so a wrong
// key is named as such. A value that is only a reference (${env:NAME}, ${file:PATH}) holds no
// secret and is stored as written. Without a key a literal secret is refused, never stored in
// clear.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
)

const sealPrefix = "qfenc:v1:"

// KeyBytes is the length of a config key.
const KeyBytes = 32

// Key is a config key (queryflux.persistence.configKey).
type Key struct {
	id   string
	aead cipher.AEAD
}

// ParseKey reads a key written as 64 hex digits or as the base64 (standard or URL alphabet) of
// 32 bytes. The error never repeats the text.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != KeyBytes {
		raw, err = base64.StdEncoding.DecodeString(s)
		if err != nil {
			raw, err = base64.URLEncoding.DecodeString(s)
		}
	}
	if err != nil || len(raw) != KeyBytes {
		return nil, fmt.Errorf("queryflux.persistence.configKey: want %d bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`)", KeyBytes)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return &Key{id: hex.EncodeToString(sum[:8]), aead: aead}, nil
}

// ID is the key's id, stored with every value it seals.
func (k *Key) ID() string { return k.id }

// errNoKey is a literal secret to store with no key configured.
var errNoKey = errors.New("would be stored in clear: set queryflux.persistence.configKey (e.g. configKey: ${env:QUERYFLUX_CONFIG_KEY}) or write a reference (${env:NAME} or ${file:PATH})")

// seal returns v as stored: "" and pure references as they are, anything else encrypted.
func (k *Key) seal(v string) (string, error) {
	if v == "" || isReferenceOnly(v) {
		return v, nil
	}
	if k == nil {
		return "", errNoKey
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := k.aead.Seal(nonce, nonce, []byte(v), []byte(k.id))
	return sealPrefix + k.id + ":" + base64.StdEncoding.EncodeToString(sealed), nil
}

// open returns a stored value in clear. A value stored before encryption existed (no prefix) is
// read as it is and sealed at the next edit.
func (k *Key) open(v string) (string, error) {
	rest, ok := strings.CutPrefix(v, sealPrefix)
	if !ok {
		return v, nil
	}
	id, b64, _ := strings.Cut(rest, ":")
	switch {
	case k == nil:
		return "", fmt.Errorf("encrypted with config key %s, and no queryflux.persistence.configKey is set", id)
	case id != k.id:
		return "", fmt.Errorf("encrypted with config key %s, but the configured key is %s", id, k.id)
	}
	sealed, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(sealed) < k.aead.NonceSize() {
		return "", errors.New("encrypted value is corrupt")
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(k.id))
	if err != nil {
		return "", errors.New("encrypted value does not open with the configured key (corrupt or tampered)")
	}
	return string(plain), nil
}

// isReferenceOnly reports whether v is nothing but ${...} references.
func isReferenceOnly(v string) bool {
	for v != "" {
		if !strings.HasPrefix(v, "${") || strings.HasPrefix(v, "${}") {
			return false
		}
		end := strings.IndexByte(v, '}')
		if end < 0 || !config.HasSecretRef(v[:end+1]) {
			return false
		}
		v = v[end+1:]
	}
	return true
}

var refPattern = regexp.MustCompile(`\$\{(env|file):[^}]*\}`)

// holdsSecret reports whether an endpoint carries a literal password ("user:pw@"; one written
// as a reference does not count).
func holdsSecret(endpoint string) bool {
	e := refPattern.ReplaceAllString(endpoint, "")
	return config.RedactURL(e) != e
}

// Package sealkey makes the AES-256-GCM ciphers that workers seal with under a key derived from
// a shared secret (the fleet's worker secret): a forwarded follow-up or whole query sealed for
// one owner at one address (internal/forward), a peer's config snapshot (node/worker). The key
// is HMAC-SHA256(secret; label, parts), so each use (its label) and each binding (its parts:
// an owner id, an address, a salt) has a key of its own, and only holders of the secret derive it.
package sealkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
)

// AEAD is the AES-256-GCM cipher keyed by HMAC-SHA256(secret) over label and parts.
//
// What the HMAC reads: the label alone when no part is given; else the label, then each part,
// each of the two ended by a zero byte ("label\x00owner\x00addr\x00salt\x00"). Parts may hold any
// bytes (a salt); a zero byte inside a part would make two part lists one key, so callers give
// parts that hold none, or fixed-length ones (a salt last). These are the keys the seals had
// before this package, so workers of either release open what the other sealed.
func AEAD(secret, label string, parts ...string) cipher.AEAD {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(label))
	if len(parts) > 0 {
		m.Write([]byte{0})
		for _, p := range parts {
			m.Write([]byte(p))
			m.Write([]byte{0})
		}
	}
	return gcm(m.Sum(nil))
}

// gcm is AES-256-GCM under a 32-byte key, which always makes a cipher.
func gcm(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

package sealkey

import (
	"encoding/hex"
	"testing"
)

// TestKeysAreTheSealsOfThePreviousRelease: what a worker of the previous release sealed (a
// forwarded follow-up, a peer's snapshot) opens here, and the reverse: the ciphertexts below were
// made by internal/forward's sealAEAD and node/worker's peerSealAEAD before this package.
func TestKeysAreTheSealsOfThePreviousRelease(t *testing.T) {
	nonce := make([]byte, 12)
	for _, c := range []struct {
		name, label string
		parts       []string
		want        string
	}{
		{"forward", "queryflux forward seal v1", []string{"w2", "10.0.0.2:8443", "0123456789abcdef"}, "854db6e4e09dd2c925dd2495b3cbe042caa251433cb2c9af"},
		{"peer snapshot", "queryflux peer snapshot seal v1", nil, "1e74812cdcb30e8ae8c70dbeb0ff945c3ecbc9618c567253"},
	} {
		got := hex.EncodeToString(AEAD("fleet-secret", c.label, c.parts...).Seal(nil, nonce, []byte("select 1"), nil))
		if got != c.want {
			t.Errorf("%s: sealed %s, the previous release %s", c.name, got, c.want)
		}
	}
}

// TestEachSecretLabelAndPartHasItsKey: a seal opens only under the secret, label and parts it was
// made with; moving a byte between parts, or between the label and a part, is another key.
func TestEachSecretLabelAndPartHasItsKey(t *testing.T) {
	nonce := make([]byte, 12)
	type key struct {
		secret, label string
		parts         []string
	}
	keys := []key{
		{"s", "l", nil},
		{"s2", "l", nil},
		{"s", "l2", nil},
		{"s", "l", []string{""}},
		{"s", "l", []string{"a", "b"}},
		{"s", "l", []string{"ab", ""}},
		{"s", "l", []string{"a", "b", ""}},
		{"s", "la", []string{"b"}},
		{"s", "l\x00a", nil},
	}
	for i, k := range keys {
		sealed := AEAD(k.secret, k.label, k.parts...).Seal(nil, nonce, []byte("payroll"), nil)
		for j, o := range keys {
			plain, err := AEAD(o.secret, o.label, o.parts...).Open(nil, nonce, sealed, nil)
			if opened := err == nil; opened != (i == j) {
				t.Errorf("sealed under %q, opened under %q: %v (%q)", k, o, err, plain)
			}
		}
	}
}

package snapshot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// A confirmation is the control plane's word that a snapshot's content was current at a time:
// it sends HeaderConfirmedAt and HeaderConfirmation with every snapshot and every 304. A worker
// keeps both with its active snapshot and hands them on with it to peers, which install a copy
// only if the confirmation is the control plane's (keyed by the worker secret) for exactly that
// content and recent enough. A party without the secret cannot forge one, nor make an old
// snapshot look freshly confirmed, nor pass off another fleet's (another secret's) snapshot.

// HeaderConfirmation carries Confirm's proof of the HeaderConfirmedAt beside it.
const HeaderConfirmation = "QueryFlux-Confirmation"

// Digest is the SHA-256 of a snapshot's canonical content (Canonical): unlike the revision
// (xxHash64, chosen for speed), nobody can make other content with the same digest.
type Digest [sha256.Size]byte

// DigestOf is the digest of s's content.
func DigestOf(s *WorkerSnapshotV1) (Digest, error) {
	canon, err := Canonical(s)
	if err != nil {
		return Digest{}, err
	}
	return sha256.Sum256(canon), nil
}

// Confirm is the control plane's proof that content of digest d was current at confirmedAt
// (HeaderConfirmedAt's exact text): hex HMAC-SHA256 keyed by the worker secret.
func Confirm(secret string, d Digest, confirmedAt string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("queryflux snapshot confirmation v1\x00"))
	m.Write(d[:])
	m.Write([]byte(confirmedAt))
	return hex.EncodeToString(m.Sum(nil))
}

// ErrUnconfirmed: a snapshot's confirmation is missing or is not the control plane's for it.
var ErrUnconfirmed = errors.New("no confirmation of the control plane for this snapshot (forged, altered, from another fleet, or lent by a worker whose control plane predates confirmations)")

// CheckConfirmation reports whether proof is Confirm's for s's content at confirmedAt under
// secret (ErrUnconfirmed when not).
func CheckConfirmation(secret string, s *WorkerSnapshotV1, confirmedAt, proof string) error {
	if secret == "" || proof == "" {
		return ErrUnconfirmed
	}
	d, err := DigestOf(s)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(Confirm(secret, d, confirmedAt)), []byte(proof)) {
		return ErrUnconfirmed
	}
	return nil
}

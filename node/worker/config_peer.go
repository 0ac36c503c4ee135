package worker

// Peer bootstrap: a worker that starts while the
// control plane is unreachable may copy the active snapshot of a peer worker, if the control plane
// confirmed that snapshot no longer ago than queryflux.controlPlane.peerBootstrap.maxAgeSecs.
// The confirmation is the control plane's own (snapshot.Confirm, keyed by the worker secret), lent
// with the snapshot: a party at a peer's address that lacks the secret cannot forge a snapshot,
// freshen an old one, or pass off another fleet's. Of the copies offered, the most recently
// confirmed is taken, so a peer that lost the control plane earlier cannot roll a worker back.
// The copy goes through the same strict compile as a polled snapshot, and the worker keeps
// polling the control plane, which replaces it as soon as it answers.
//
// A worker presents PeerToken(secret) to peers, never the secret itself: whoever answers at a
// peer's address learns nothing that registers with the control plane or forges a confirmation;
// and what a lender serves is sealed with the secret, so the token, which whoever answered can
// present to any worker, reads no snapshot (sealPeerSnapshot).

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/sealkey"
	"github.com/queryflux/queryflux/node/workerapi"
)

// PathPeerConfig is where a worker's ops listener serves its active snapshot to peers.
const PathPeerConfig = "/worker/peer-config"

// Peer bootstrap limits.
const (
	PeerRequestTimeoutDefault = 5 * time.Second
	peersMax                  = 64
)

// PeerOptions let a ConfigSync copy a peer's snapshot while the control plane is unreachable.
type PeerOptions struct {
	// Addresses are the peers' ops listeners: host:port or http(s) URLs.
	Addresses []string
	// MaxAge is the oldest control-plane confirmation a copied snapshot may carry.
	MaxAge time.Duration
	// Secret is the shared worker secret, presented to peers and required from them.
	Secret string
	// Client carries the requests to peers (no Timeout set); RequestTimeout bounds each one.
	Client         *http.Client
	RequestTimeout time.Duration
}

// PeerToken is what a worker presents to its peers: derived from the worker secret, so that a
// party answering at a peer's address (a host that took over its address, a stale entry in
// peerBootstrap.address) does not learn the secret itself.
func PeerToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("queryflux peer config v1"))
	return "qfp_" + hex.EncodeToString(m.Sum(nil))
}

// PeerConfigHandler serves this worker's active snapshot to peers at GET PathPeerConfig, with
// the control plane's last confirmation of it (snapshot.HeaderConfirmedAt and
// snapshot.HeaderConfirmation). Peers must present PeerToken(secret) (or, from workers that
// predate it, the secret itself): the snapshot can carry cluster credentials. 503 when there is
// no snapshot the control plane confirmed.
func (s *ConfigSync) PeerConfigHandler(secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := workerapi.BearerToken(r)
		if !ok || !workerapi.TokenEqual(token, PeerToken(secret)) && !workerapi.TokenEqual(token, secret) {
			workerapi.WriteError(w, http.StatusUnauthorized, "the shared worker secret is required", "Authorization")
			return
		}
		s.mu.Lock()
		snap, proof := s.active, s.proof
		s.mu.Unlock()
		if snap == nil || proof == (confirmation{}) {
			workerapi.WriteError(w, http.StatusServiceUnavailable, "no configuration confirmed by the control plane", "")
			return
		}
		body, err := snapshot.Encode(snap)
		if err != nil {
			panic(fmt.Sprintf("worker: the active snapshot does not encode: %v", err)) // it decoded once
		}
		body = sealPeerSnapshot(secret, proof, body)
		w.Header().Set("Content-Type", snapshot.MediaType)
		w.Header().Set(HeaderPeerSealed, peerSealV1)
		w.Header().Set(snapshot.HeaderConfirmedAt, proof.at)
		w.Header().Set(snapshot.HeaderConfirmation, proof.proof)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

// BootstrapFromPeers asks every peer (the first peersMax) and installs, of the snapshots whose
// confirmation is the control plane's and recent enough, the most recently confirmed that
// compiles. It does nothing if a configuration is already active.
func (s *ConfigSync) BootstrapFromPeers(ctx context.Context, p PeerOptions) error {
	if cfg, _ := s.Active(); cfg != nil {
		return nil
	}
	if len(p.Addresses) == 0 || p.MaxAge <= 0 || p.Client == nil {
		return errors.New("peer bootstrap not configured")
	}
	if p.RequestTimeout <= 0 {
		p.RequestTimeout = PeerRequestTimeoutDefault
	}
	type offer struct {
		addr      string
		snap      *snapshot.WorkerSnapshotV1
		confirmed time.Time
		proof     confirmation
	}
	var offers []offer
	var errs []error
	for _, addr := range p.Addresses[:min(len(p.Addresses), peersMax)] {
		snap, proof, err := s.fetchPeer(ctx, p, addr)
		var confirmed time.Time
		if err == nil {
			confirmed, err = time.Parse(time.RFC3339Nano, proof.at)
		}
		if err == nil {
			if age := s.e.Now().Sub(confirmed); age > p.MaxAge {
				err = fmt.Errorf("its snapshot was confirmed %s ago, more than %s", age.Round(time.Second), p.MaxAge)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("peer %s: %w", addr, err))
			continue
		}
		offers = append(offers, offer{addr, snap, confirmed, proof})
	}
	// The most recently confirmed first: a peer cut off from the control plane earlier holds an
	// older revision.
	slices.SortStableFunc(offers, func(a, b offer) int { return b.confirmed.Compare(a.confirmed) })
	for _, o := range offers {
		err := s.install(ctx, o.snap, "peer", o.confirmed, o.proof)
		if err == nil {
			s.e.Logger().Info("config copied from a peer", "worker", s.w.Name(), "peer", o.addr, "revision", o.snap.Revision)
			return nil
		}
		errs = append(errs, fmt.Errorf("peer %s: %w", o.addr, err))
	}
	return errors.Join(errs...)
}

// fetchPeer asks one peer for its snapshot and the control plane's confirmation of it, and
// checks that the confirmation is the control plane's for that content.
func (s *ConfigSync) fetchPeer(ctx context.Context, p PeerOptions, addr string) (*snapshot.WorkerSnapshotV1, confirmation, error) {
	base := addr
	if !strings.Contains(addr, "://") {
		base = "http://" + addr
	}
	rctx, cancel := s.e.WithTimeout(ctx, p.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimRight(base, "/")+PathPeerConfig, nil)
	if err != nil {
		return nil, confirmation{}, err
	}
	workerapi.SetBearer(req, PeerToken(p.Secret))
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, confirmation{}, errors.New(s.w.redact(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, confirmation{}, fmt.Errorf("%d %s", resp.StatusCode, workerapi.ReadError(resp).Error)
	}
	if _, err := time.Parse(time.RFC3339Nano, resp.Header.Get(snapshot.HeaderConfirmedAt)); err != nil {
		return nil, confirmation{}, fmt.Errorf("no valid %s header", snapshot.HeaderConfirmedAt)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, configBodyBytesMax+1+peerSealOverhead))
	if err != nil {
		return nil, confirmation{}, err
	}
	proof := confirmation{at: resp.Header.Get(snapshot.HeaderConfirmedAt), proof: resp.Header.Get(snapshot.HeaderConfirmation)}
	if resp.Header.Get(HeaderPeerSealed) != "" { // a peer that predates sealing lends it plain
		if body, err = openPeerSnapshot(p.Secret, proof, body, resp.Header.Get(HeaderPeerSealed)); err != nil {
			return nil, confirmation{}, err
		}
	}
	if len(body) > configBodyBytesMax {
		return nil, confirmation{}, fmt.Errorf("snapshot larger than %d bytes", configBodyBytesMax)
	}
	snap, err := snapshot.Decode(body)
	if err != nil {
		return nil, confirmation{}, err
	}
	if err := snapshot.CheckConfirmation(p.Secret, snap, proof.at, proof.proof); err != nil {
		return nil, confirmation{}, err
	}
	return snap, proof, nil
}

// A lent snapshot can carry cluster credentials, and PeerToken is the same from every worker:
// whoever answers at a peer's address once (a host that took it over, a stale peerBootstrap
// entry) learns it and could replay it to every worker's ops listener. So a lender seals the
// snapshot with a key derived from the worker secret (AES-256-GCM): only a holder of the secret
// reads it, whoever presents the token.

// HeaderPeerSealed names how a lent snapshot's body is sealed; absent from peers that predate it.
const HeaderPeerSealed = "QueryFlux-Peer-Sealed"

const (
	peerSealV1       = "aes-256-gcm-v1"
	peerSealOverhead = 16 // the GCM tag
)

// peerSealAEAD is the cipher keyed by the worker secret.
func peerSealAEAD(secret string) cipher.AEAD {
	return sealkey.AEAD(secret, "queryflux peer snapshot seal v1")
}

// peerSealNonce is the nonce for the snapshot the confirmation proof confirms: the proof binds
// its time and content digest, so one nonce never seals two contents (and the same content sealed
// twice is the same bytes: no random source, as the simulator needs).
func peerSealNonce(aead cipher.AEAD, proof confirmation) []byte {
	sum := sha256.Sum256([]byte("queryflux peer snapshot nonce v1\x00" + proof.at + "\x00" + proof.proof))
	return sum[:aead.NonceSize()]
}

// sealPeerSnapshot seals body for a peer holding secret; the confirmation headers are its
// associated data.
func sealPeerSnapshot(secret string, proof confirmation, body []byte) []byte {
	aead := peerSealAEAD(secret)
	return aead.Seal(nil, peerSealNonce(aead, proof), body, []byte(proof.at+"\x00"+proof.proof))
}

// openPeerSnapshot opens a body sealed by sealPeerSnapshot (how: the peer's HeaderPeerSealed).
func openPeerSnapshot(secret string, proof confirmation, body []byte, how string) ([]byte, error) {
	if how != peerSealV1 {
		return nil, fmt.Errorf("a snapshot sealed as %q, which this worker does not know", how)
	}
	aead := peerSealAEAD(secret)
	out, err := aead.Open(nil, peerSealNonce(aead, proof), body, []byte(proof.at+"\x00"+proof.proof))
	if err != nil {
		return nil, errors.New("a sealed snapshot that does not open with this worker's secret")
	}
	return out, nil
}

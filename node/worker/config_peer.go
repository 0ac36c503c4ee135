package worker

// Peer bootstrap: a worker that starts while the
// control plane is unreachable may copy the active snapshot of a peer worker, if the control plane
// confirmed that snapshot no longer ago than queryflux.controlPlane.peerBootstrap.maxAgeSecs.
// The copy goes through the same strict compile as a polled snapshot, and the worker keeps
// polling the control plane, which replaces it as soon as it answers.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
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

// PeerConfigHandler serves this worker's active snapshot to peers at GET PathPeerConfig, with
// snapshot.HeaderConfirmedAt saying when the control plane last confirmed it. Peers must present
// the shared worker secret (the snapshot can carry cluster credentials). 503 when there is none.
func (s *ConfigSync) PeerConfigHandler(secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := workerapi.BearerToken(r)
		if !ok || !workerapi.TokenEqual(token, secret) {
			workerapi.WriteError(w, http.StatusUnauthorized, "the shared worker secret is required", "Authorization")
			return
		}
		_, snap := s.Active()
		confirmed := s.ConfirmedAt()
		if snap == nil || confirmed.IsZero() {
			workerapi.WriteError(w, http.StatusServiceUnavailable, "no confirmed configuration", "")
			return
		}
		body, err := snapshot.Encode(snap)
		if err != nil {
			panic(fmt.Sprintf("worker: the active snapshot does not encode: %v", err)) // it decoded once
		}
		w.Header().Set("Content-Type", snapshot.MediaType)
		w.Header().Set(snapshot.HeaderConfirmedAt, confirmed.UTC().Format(time.RFC3339Nano))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

// BootstrapFromPeers asks the peers in order and installs the first snapshot that is recent
// enough and compiles. It does nothing if a configuration is already active.
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
	var errs []error
	for _, addr := range p.Addresses[:min(len(p.Addresses), peersMax)] {
		snap, confirmed, err := s.fetchPeer(ctx, p, addr)
		if err == nil {
			if age := s.e.Now().Sub(confirmed); age > p.MaxAge {
				err = fmt.Errorf("its snapshot was confirmed %s ago, more than %s", age.Round(time.Second), p.MaxAge)
			}
		}
		if err == nil {
			err = s.Seed(ctx, snap, "peer", confirmed)
		}
		if err == nil {
			s.e.Logger().Info("config copied from a peer", "worker", s.w.Name(), "peer", addr, "revision", snap.Revision)
			return nil
		}
		errs = append(errs, fmt.Errorf("peer %s: %w", addr, err))
	}
	return errors.Join(errs...)
}

func (s *ConfigSync) fetchPeer(ctx context.Context, p PeerOptions, addr string) (*snapshot.WorkerSnapshotV1, time.Time, error) {
	base := addr
	if !strings.Contains(addr, "://") {
		base = "http://" + addr
	}
	rctx, cancel := s.e.WithTimeout(ctx, p.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimRight(base, "/")+PathPeerConfig, nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	workerapi.SetBearer(req, p.Secret)
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, time.Time{}, errors.New(s.w.redact(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, fmt.Errorf("%d %s", resp.StatusCode, workerapi.ReadError(resp).Error)
	}
	confirmed, err := time.Parse(time.RFC3339Nano, resp.Header.Get(snapshot.HeaderConfirmedAt))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("no valid %s header", snapshot.HeaderConfirmedAt)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, configBodyBytesMax+1))
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(body) > configBodyBytesMax {
		return nil, time.Time{}, fmt.Errorf("snapshot larger than %d bytes", configBodyBytesMax)
	}
	snap, err := snapshot.Decode(body)
	if err != nil {
		return nil, time.Time{}, err
	}
	return snap, confirmed, nil
}

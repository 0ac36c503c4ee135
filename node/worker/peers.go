package worker

// Peers: a worker that advertises endpoints (where its frontends take requests forwarded by
// other workers) registers them with the control plane and keeps a list of its online peers,
// refreshed every heartbeat interval and on demand, from GET /worker/peers.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/workerapi"
)

// peerRefreshMin is the shortest time between two on-demand refreshes of the peer list: a
// burst of requests for an unknown owner asks the control plane once. The periodic refresh does
// not count: a peer that registered since must be found at once.
const peerRefreshMin = time.Second

// SetEndpoints sets where peers reach this worker's frontends, by protocol (workerapi.Peer).
// Call it before Start: the endpoints go out with the registration, and a worker that has
// endpoints keeps its peer list fresh.
func (w *Worker) SetEndpoints(endpoints map[string]string) error {
	req := workerapi.RegisterRequest{Name: w.cfg.Name, Version: w.cfg.Version, Endpoints: endpoints}
	if err := req.Validate(); err != nil {
		return fmt.Errorf("worker endpoints: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endpoints = maps.Clone(endpoints)
	return nil
}

// Advertised is the endpoints SetEndpoints set (nil before): the map is not written after, so
// callers may read it but must not change it.
func (w *Worker) Advertised() map[string]string { return w.advertised() }

func (w *Worker) advertised() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.endpoints
}

// Peers returns the last peer list the control plane gave (this worker included), sorted by name.
func (w *Worker) Peers() []workerapi.Peer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.peers)
}

// RefreshPeers asks the control plane for the peer list now, unless it was asked on demand less
// than peerRefreshMin ago.
func (w *Worker) RefreshPeers(ctx context.Context) error {
	now := w.e.Now()
	w.mu.Lock()
	recent := !w.peersAt.IsZero() && now.Sub(w.peersAt) < peerRefreshMin
	if !recent {
		w.peersAt = now
	}
	w.mu.Unlock()
	if recent {
		return nil
	}
	return w.loadPeers(ctx)
}

// loadPeers fetches the peer list and keeps it.
func (w *Worker) loadPeers(ctx context.Context) error {
	peers, err := w.fetchPeers(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.peers = peers
	w.mu.Unlock()
	return nil
}

func (w *Worker) fetchPeers(ctx context.Context) ([]workerapi.Peer, error) {
	rctx, cancel := w.e.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, workerapi.PathWorkerPeers, nil)
	if err != nil {
		return nil, err
	}
	resp, err := w.Do(rctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &workerapi.StatusError{Status: resp.StatusCode, Body: workerapi.ReadError(resp)}
	}
	var peers []workerapi.Peer
	if err := json.NewDecoder(io.LimitReader(resp.Body, workerapi.BodyBytesMax)).Decode(&peers); err != nil {
		return nil, fmt.Errorf("worker: unreadable peer list: %w", err)
	}
	return peers, nil
}

// refreshPeers is the peer list duty: it refreshes the list every heartbeat interval.
func (w *Worker) refreshPeers(ctx context.Context, _ time.Time) time.Time {
	if err := w.loadPeers(ctx); err != nil && ctx.Err() == nil {
		w.e.Logger().Debug("peer list not refreshed", "worker", w.cfg.Name, "err", redact.Error(err))
	}
	w.mu.Lock()
	wait := w.interval
	w.mu.Unlock()
	return w.e.Now().Add(wait)
}

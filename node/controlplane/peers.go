package controlplane

import (
	"maps"
	"net/http"

	"github.com/queryflux/queryflux/node/workerapi"
)

// handlePeers lists the online workers that advertise endpoints, so that a worker can send a
// request it does not own to the worker that does (and pick a preferred worker among them).
func (cp *ControlPlane) handlePeers(w http.ResponseWriter, _ *http.Request, _ string) {
	workerapi.WriteJSON(w, http.StatusOK, workerapi.MediaWorkerPeers, cp.Peers())
}

// Peers returns the online workers with endpoints, sorted by name.
func (cp *ControlPlane) Peers() []workerapi.Peer {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	out := []workerapi.Peer{}
	for _, name := range cp.sortedNames() {
		en := cp.workers[name]
		if !en.life.Online() || len(en.rec.Endpoints) == 0 {
			continue
		}
		healthy := en.life.State == workerapi.StateHealthy &&
			(en.rec.Heartbeat == nil || en.rec.Heartbeat.Health.State != workerapi.HealthUnhealthy)
		out = append(out, workerapi.Peer{Name: name, Endpoints: maps.Clone(en.rec.Endpoints), Healthy: healthy,
			Labels: maps.Clone(en.rec.Labels)})
	}
	return out
}

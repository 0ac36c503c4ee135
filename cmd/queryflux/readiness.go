package main

// Readiness of a standalone node or control plane (/readyz on the admin listener): a worker's
// lives on its ops listener (node/worker). Not ready while draining, while the database does not
// answer, or while the node has no configuration to serve queries with.

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/transport"
)

// readinessPingTimeout bounds each check so a hung database cannot hang the probe.
const readinessPingTimeout = 2 * time.Second

type readiness struct {
	draining atomic.Bool
	mu       sync.Mutex
	checks   []readinessCheck
}

type readinessCheck struct {
	name  string
	check func(ctx context.Context) error
}

var nodeReadiness = &readiness{}

// add registers a check; /readyz answers 503 while it fails.
func (r *readiness) add(name string, check func(ctx context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, readinessCheck{name, check})
}

func (r *readiness) reasons(ctx context.Context) []string {
	if r.draining.Load() {
		return []string{"draining: shutting down"}
	}
	r.mu.Lock()
	checks := append([]readinessCheck(nil), r.checks...)
	r.mu.Unlock()
	var out []string
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, readinessPingTimeout)
		err := c.check(cctx)
		cancel()
		if err != nil {
			out = append(out, c.name+": "+err.Error())
		}
	}
	return out
}

func (r *readiness) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if reasons := r.reasons(req.Context()); len(reasons) > 0 {
			transport.WriteJSON(w, http.StatusServiceUnavailable, "application/json", map[string]any{"ready": false, "reasons": reasons})
			return
		}
		transport.WriteJSON(w, http.StatusOK, "application/json", map[string]any{"ready": true})
	})
}

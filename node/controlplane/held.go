package controlplane

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/queryflux/queryflux/node/workerapi"
)

// HeldPerWorkerMax is how many requests of one kind that the control plane holds open (config
// long-polls, contention watches) one worker name may have at once. A worker needs one of each;
// a restarted process may overlap its predecessor's for one poll. More are answered 429 at
// once, and their connections closed: held requests are what a worker could otherwise fill the
// API listener's connections with (queryflux.limits.maxConnections), and every other worker's
// heartbeats would then be refused until it was evicted.
const HeldPerWorkerMax = 4

// heldCounts counts the held requests of each worker by kind.
type heldCounts struct {
	mu sync.Mutex
	n  map[heldKey]int
}

type heldKey struct{ worker, kind string }

// held runs serve, a handler that holds its request open, unless worker already has
// HeldPerWorkerMax requests of kind held; then it answers 429 and closes the connection.
func (cp *ControlPlane) held(w http.ResponseWriter, worker, kind string, serve func()) {
	k := heldKey{worker, kind}
	c := &cp.heldCount
	c.mu.Lock()
	if c.n == nil {
		c.n = map[heldKey]int{}
	}
	full := c.n[k] >= HeldPerWorkerMax
	if !full {
		c.n[k]++
	}
	c.mu.Unlock()
	if full {
		cp.metrics.heldRefused.WithLabelValues(kind).Inc()
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		workerapi.WriteError(w, http.StatusTooManyRequests,
			fmt.Sprintf("this worker already holds %d %s requests open, the most one worker may", HeldPerWorkerMax, kind), "")
		return
	}
	defer func() {
		c.mu.Lock()
		if c.n[k]--; c.n[k] == 0 {
			delete(c.n, k)
		}
		c.mu.Unlock()
	}()
	serve()
}

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

// AcquireWaitsPerWorkerMax is how many lease acquires one worker name may have waiting in the
// ordered queue (coordination.queue: ordered) at once, over all clusters: each is a request
// held open for up to capacity.AcquireWaitMax. A worker's queued queries each wait through one
// (maxQueuedQueries, 100 per group by default); an acquire beyond is decided at once, and the
// query asks again when one of the worker's own leases is released.
const AcquireWaitsPerWorkerMax = 256

// takeHeld counts one more held request of kind for worker, unless it has max already.
func (cp *ControlPlane) takeHeld(worker, kind string, max int) (done func(), ok bool) {
	k := heldKey{worker, kind}
	c := &cp.heldCount
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[heldKey]int{}
	}
	if c.n[k] >= max {
		return nil, false
	}
	c.n[k]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[k]--; c.n[k] == 0 {
			delete(c.n, k)
		}
	}, true
}

// heldCounts counts the held requests of each worker by kind.
type heldCounts struct {
	mu sync.Mutex
	n  map[heldKey]int
}

type heldKey struct{ worker, kind string }

// held runs serve, a handler that holds its request open, unless worker already has
// HeldPerWorkerMax requests of kind held; then it answers 429 and closes the connection.
func (cp *ControlPlane) held(w http.ResponseWriter, worker, kind string, serve func()) {
	done, ok := cp.takeHeld(worker, kind, HeldPerWorkerMax)
	if !ok {
		cp.metrics.heldRefused.WithLabelValues(kind).Inc()
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		workerapi.WriteError(w, http.StatusTooManyRequests,
			fmt.Sprintf("this worker already holds %d %s requests open, the most one worker may", HeldPerWorkerMax, kind), "")
		return
	}
	defer done()
	serve()
}

package capacity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// The contention watch: a worker that reuses its idle leases (LeaseGuard) long-polls the control
// plane with the clusters it reuses, and the control plane answers at once when another worker
// contends for one of them (an acquire denied there), or after the wait. One request per wait
// instead of a renewal every checkAfter (a round trip per cluster every 10 ms: about 5 % of a
// busy worker's CPU and most of its control plane's), and the reusing worker hears of a denial
// one round trip after it, not up to checkAfter later.

// PathWatch is the contention watch (POST WatchRequest, answered WatchResponse).
const PathWatch = "/worker/capacity/watch"

const (
	// WatchClustersMax bounds the clusters of one watch.
	WatchClustersMax = 100
	// WatchWaitMax bounds how long the control plane holds a watch.
	WatchWaitMax = 10 * time.Second
	// watchWait is how long a LeaseGuard's watch asks to be held. A worker whose watch's answer
	// is lost goes on reusing for at most this plus leaseReuseWindow after sending it: the one
	// case where a denied worker waits longer than a round trip for a reusing one to let go.
	watchWait = time.Second
	// watchRecheckEvery is how often a held watch reads the waiting record again without a
	// wake-up: a denial at another replica (which shares the store, not this replica's
	// wake-ups), or a cap lowered under the leases held, is seen within it.
	watchRecheckEvery = 50 * time.Millisecond
	// watchRetry is how long a LeaseGuard waits after a failed watch before watching again;
	// meanwhile reuse lasts leaseReuseWindow from each acquire's answer.
	watchRetry = 250 * time.Millisecond
)

// ErrWatchUnsupported: the control plane has no contention watch (it predates PathWatch).
var ErrWatchUnsupported = errors.New("capacity: the control plane has no contention watch")

// WatchRequest asks to be answered when another worker contends for one of Clusters, or after
// WaitMillis (at most WatchWaitMax). Holder is only read by the unauthenticated handler.
type WatchRequest struct {
	Clusters   []string `json:"clusters"`
	WaitMillis int64    `json:"waitMillis"`
	Holder     string   `json:"holder,omitempty"`
}

// WatchResponse lists, in request order, the watched clusters that nobody else contended for
// when it was sent (RenewBatchResponse.Uncontended's meaning); the others are contended.
type WatchResponse struct {
	Uncontended []string `json:"uncontended"`
}

// ContentionWatcher is a LeaseClient whose control plane answers contention watches. A
// LeaseGuard that reuses leases holds one watch open instead of checking every checkAfter.
type ContentionWatcher interface {
	// WatchContention answers the clusters of clusters that no other holder than holder
	// contends for when the control plane answered: at once when one of them is contended,
	// else after about wait. ErrWatchUnsupported: the control plane predates the watch.
	WatchContention(ctx context.Context, holder string, clusters []string, wait time.Duration) (uncontended []string, err error)
}

// checkWatch validates a watch request.
func checkWatch(req WatchRequest) error {
	if len(req.Clusters) == 0 || len(req.Clusters) > WatchClustersMax {
		return fmt.Errorf("%w: a watch names 1 to %d clusters, not %d", ErrInvalid, WatchClustersMax, len(req.Clusters))
	}
	if req.WaitMillis < 0 {
		return fmt.Errorf("%w: waitMillis %d is negative", ErrInvalid, req.WaitMillis)
	}
	for i, c := range req.Clusters {
		if err := CheckName("cluster", c); err != nil {
			return err
		}
		if slices.Contains(req.Clusters[:i], c) {
			return fmt.Errorf("%w: cluster %q is named twice in one watch", ErrInvalid, c)
		}
	}
	return nil
}

// serveWatch holds a watch until one of its clusters is contended for the caller or its wait
// is over, reading the waiting record again whenever a denial at this replica wakes it and at
// least every watchRecheckEvery.
func (a *API) serveWatch(w http.ResponseWriter, r *http.Request, caller string) {
	var req WatchRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	if err := checkWatch(req); err != nil {
		a.fail(w, "watch", err)
		return
	}
	holder := pick(caller, req.Holder)
	ctx := r.Context()
	end := a.env.Now().Add(min(millis(req.WaitMillis), WatchWaitMax))
	for {
		seen := a.denials.Seq()
		uncontended := a.uncontendedOf(ctx, req.Clusters, holder)
		now := a.env.Now()
		if len(uncontended) < len(req.Clusters) || !now.Before(end) {
			workerapi.WriteJSON(w, http.StatusOK, MediaJSON, WatchResponse{Uncontended: uncontended})
			return
		}
		wctx, cancel := a.env.WithTimeout(ctx, min(end.Sub(now), watchRecheckEvery))
		_ = a.denials.Wait(wctx, seen)
		cancel()
		if ctx.Err() != nil {
			return // the worker went away
		}
	}
}

// uncontendedOf lists those of clusters (each once, in order) that nobody but holder contends
// for: none in ordered mode, where workers reuse no lease.
func (a *API) uncontendedOf(ctx context.Context, clusters []string, holder string) []string {
	out := []string{}
	if a.queue != nil {
		return out
	}
	for _, c := range clusters {
		if !slices.Contains(out, c) && a.uncontendedOn(ctx, c, holder) {
			out = append(out, c)
		}
	}
	return out
}

// uncontendedOn reports whether no other worker than holder was denied cluster lately and its
// leases are within its cap: a cap lowered under the leases granted before counts as
// contended, so that workers stop reusing them and the cluster drains under the new cap.
func (a *API) uncontendedOn(ctx context.Context, cluster, holder string) bool {
	limit, _, err := a.terms(cluster, 0, 0) // 0: no cap known (an API without Limits)
	if err != nil {
		return false
	}
	c, ok := a.contention(ctx, cluster, holder)
	return ok && !c.Others && (limit == 0 || c.Leases <= limit)
}

// WatchContention implements ContentionWatcher; holder names the watcher only where the
// control plane does not authenticate.
func (c *Remote) WatchContention(ctx context.Context, holder string, clusters []string, wait time.Duration) ([]string, error) {
	if c.noWatch.Load() {
		return nil, ErrWatchUnsupported
	}
	var resp WatchResponse
	err := c.post(ctx, PathWatch, WatchRequest{Clusters: clusters, WaitMillis: wait.Milliseconds(), Holder: holder}, &resp)
	var se *workerapi.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
		c.noWatch.Store(true)
		return nil, ErrWatchUnsupported
	}
	return resp.Uncontended, err
}

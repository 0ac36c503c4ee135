package capacity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
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
	// watchRecheckEvery is how often a held watch looks again without a wake-up. While no
	// DenialWatcher reports the other replicas' denials, it reads the waiting record again: a
	// denial at another replica (which shares the store, not this replica's wake-ups) is seen
	// within it. While one does, it only compares the caps (this replica's configuration, in
	// memory) and reads the record again when one was lowered: a cap lowered under the leases
	// held is seen within it either way.
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
// is over. It reads the waiting record when the watch comes, whenever a denial wakes it (one at
// this replica, or one at another that a DenialWatcher reported), and when a cap it watches is
// lowered; while no DenialWatcher reports the other replicas' denials, also every
// watchRecheckEvery. Contention only appears through a denial or a lowered cap, so a watch
// nothing woke is answered at the end of its wait with what it read last.
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
		seen, caps := a.denials.Seq(), a.capsOf(req.Clusters)
		uncontended := a.uncontendedOf(ctx, req.Clusters, holder)
		if len(uncontended) < len(req.Clusters) || !a.env.Now().Before(end) {
			workerapi.WriteJSON(w, http.StatusOK, MediaJSON, WatchResponse{Uncontended: uncontended})
			return
		}
		for {
			now := a.env.Now()
			if !now.Before(end) {
				if a.heard.Load() && a.denials.Seq() == seen {
					// Nothing happened that could contend: what it read stands.
					workerapi.WriteJSON(w, http.StatusOK, MediaJSON, WatchResponse{Uncontended: uncontended})
					return
				}
				break
			}
			wctx, cancel := a.env.WithTimeout(ctx, min(end.Sub(now), watchRecheckEvery))
			woke := a.denials.Wait(wctx, seen) == nil
			cancel()
			if ctx.Err() != nil {
				return // the worker went away
			}
			if woke || !a.heard.Load() || a.capLowered(req.Clusters, caps) {
				break
			}
		}
	}
}

// capsOf is the cap in force now of each of clusters (0: none known), from this replica's own
// configuration: no store read.
func (a *API) capsOf(clusters []string) []int {
	caps := make([]int, len(clusters))
	for i, c := range clusters {
		caps[i], _, _ = a.terms(c, 0, 0)
	}
	return caps
}

// capLowered reports whether a cap of clusters is now below caps (capsOf's earlier answer).
func (a *API) capLowered(clusters []string, caps []int) bool {
	for i, c := range clusters {
		if now, _, err := a.terms(c, 0, 0); err != nil || now != caps[i] && (caps[i] == 0 || now < caps[i]) {
			return true
		}
	}
	return false
}

// DenialWatcher is a waiting record shared by several control-plane replicas that tells each
// one of the denials the others record (Postgres LISTEN/NOTIFY), so that a contention watch
// held at one replica hears of a denial at another when it happens, instead of reading the
// record again every watchRecheckEvery (20 reads a second per open watch).
type DenialWatcher interface {
	// NotifyDenied makes the store announce denials to the other replicas' watches. It may
	// leave out a denial of a holder it announced a denial of, on the same cluster, less than
	// ContendedFor/2 before: every watch held then was woken, and one that comes later finds
	// that denial in the record when it reads it.
	NotifyDenied()
	// WatchDenied calls listening once its watch is in place (denials recorded before it may
	// not be reported), then denied with the cluster of each denial another replica announces,
	// until ctx ends or the watch fails. Neither may block.
	WatchDenied(ctx context.Context, listening func(), denied func(cluster string)) error
}

// WatchDenied wakes the contention watches held here at each denial another replica records,
// as w reports them, until ctx ends; a failed watch is retried a second later. While w's watch
// is in place held watches read the waiting record only when woken; while it is not, every
// watchRecheckEvery as before (when it comes or goes, every held watch reads the record once
// more: a denial may have gone unreported meanwhile).
func (a *API) WatchDenied(ctx context.Context, w DenialWatcher) {
	defer a.heard.Store(false)
	for ctx.Err() == nil {
		err := w.WatchDenied(ctx, func() {
			a.heard.Store(true)
			a.denials.Notify()
		}, func(string) { a.denials.Notify() })
		a.heard.Store(false)
		a.denials.Notify()
		if ctx.Err() != nil {
			return
		}
		a.env.Logger().Warn("capacity: watching other replicas' denials failed; retrying (held contention watches reread the waiting record meanwhile)", "err", redact.Error(err))
		_ = a.env.Sleep(ctx, time.Second)
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

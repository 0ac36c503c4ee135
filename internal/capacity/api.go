package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/transport"
)

// Worker API paths (POST, JSON bodies).
const (
	PathAcquire          = "/worker/capacity/acquire"
	PathRenew            = "/worker/capacity/renew"
	PathReleaseBatch     = "/worker/capacity/release-batch"
	PathSweepLockAcquire = "/worker/sweep-lock/acquire"
	PathSweepLockRelease = "/worker/sweep-lock/release"
)

// MediaJSON is the media type of every capacity request and answer.
const MediaJSON = "application/json"

// AcquireRequest asks for a lease. Holder is only read by the unauthenticated handler (tests,
// benchmarks); behind the control plane's auth the holder is the authenticated worker. Behind
// an API with Limits (the control plane), Cap and TTLMillis can only lower the cluster's
// configured cap and lease TTL, never raise them; 0 takes the configured ones.
type AcquireRequest struct {
	Cluster   string `json:"cluster"`
	Cap       int    `json:"cap"`
	TTLMillis int64  `json:"ttlMillis"`
	Holder    string `json:"holder,omitempty"`
	// WaitMillis > 0 long-polls in the cluster's arrival-order queue (API.Ordered) for up to
	// that long (at most AcquireWaitMax) instead of answering a denial at once.
	WaitMillis int64 `json:"waitMillis,omitempty"`
	// Release frees these leases (stale ones skipped): a worker's queued releases ride on its next
	// acquire instead of a round trip of their own. In retry mode they are freed after the acquire
	// is decided (they still count against it); in ordered mode before it waits.
	Release []LeaseRef `json:"release,omitempty"`
}

// AcquireResponse grants a lease, or denies it (Granted false, Lease nil).
type AcquireResponse struct {
	Granted bool   `json:"granted"`
	Lease   *Lease `json:"lease,omitempty"`
	// Contended says whether another worker's acquire of the cluster was denied or had to wait
	// at this control plane within the last ContendedFor. A worker keeps released leases idle
	// for its own next acquire only while this is false. Absent (an older control plane) counts
	// as true; older workers ignore it.
	Contended *bool `json:"contended,omitempty"`
}

// RenewRequest extends one lease; a stale lease gets 409.
type RenewRequest struct {
	Lease     LeaseRef `json:"lease"`
	TTLMillis int64    `json:"ttlMillis"`
}

// RenewResponse carries the renewed lease.
type RenewResponse struct {
	Lease Lease `json:"lease"`
}

// ReleaseBatchRequest frees leases; stale ones are skipped.
type ReleaseBatchRequest struct {
	Leases []LeaseRef `json:"leases"`
}

// ReleaseBatchResponse says how many leases were freed.
type ReleaseBatchResponse struct {
	Released int `json:"released"`
}

// SweepLockRequest takes (TTLMillis > 0) or releases a sweep lock for the authenticated owner.
type SweepLockRequest struct {
	Name      string `json:"name"`
	TTLMillis int64  `json:"ttlMillis,omitempty"`
	Owner     string `json:"owner,omitempty"` // unauthenticated handler only
}

// SweepLockResponse grants the lock, or says another owner holds it (Granted false).
type SweepLockResponse struct {
	Granted bool       `json:"granted"`
	Lock    *SweepLock `json:"lock,omitempty"`
}

// API serves the capacity endpoints of the worker API from a CapacityStore, a SweepCoordinator
// and the control plane's clock.
type API struct {
	store     CapacityStore
	locks     SweepCoordinator
	env       env.Env
	metrics   *Metrics
	queue     *orderedQueue // nil unless Ordered
	contended contention
	limits    Limits // nil: the requests' caps and TTLs are taken as they are (tests)
}

// Limits answers a cluster's cap and lease TTL from the control plane's own current
// configuration; ok is false for a cluster it does not have.
type Limits func(cluster string) (limit int, ttl time.Duration, ok bool)

// Authority makes the API the authority on every lease: an acquire's cap and TTL, and a
// renewal's TTL, come from limits (a request may only ask for less), and an acquire of a
// cluster limits does not know is refused. Call it before serving.
func (a *API) Authority(limits Limits) *API {
	a.limits = limits
	return a
}

// terms are the cap and TTL a lease of cluster is granted or renewed under: limits' when set,
// lowered by what the request asked for.
func (a *API) terms(cluster string, limit int, ttl time.Duration) (int, time.Duration, error) {
	if a.limits == nil {
		return limit, ttl, nil
	}
	capMax, ttlMax, ok := a.limits(cluster)
	if !ok {
		return 0, 0, fmt.Errorf("%w: %w %q: the control plane's configuration has no such cluster", ErrInvalid, ErrUnknownCluster, cluster)
	}
	if limit <= 0 || limit > capMax {
		limit = capMax
	}
	if ttl <= 0 || ttl > ttlMax {
		ttl = ttlMax
	}
	return limit, ttl, nil
}

// claimed returns refs claimed by holder ("" leaves them unclaimed: the unauthenticated handler).
func claimed(refs []LeaseRef, holder string) []LeaseRef {
	if holder == "" {
		return refs
	}
	out := make([]LeaseRef, len(refs))
	for i, r := range refs {
		out[i] = r.As(holder)
	}
	return out
}

// ContendedFor is how long after a worker's acquire was denied or had to wait the control plane
// still calls the cluster contended in its answers to other workers: a second covers the proxy
// core's longest retry back-off (500 ms) twice, so a worker that keeps retrying keeps it set.
const ContendedFor = time.Second

// contention remembers, per cluster and holder, the last acquire that was denied or had to wait
// on this replica (each replica knows its own; a worker asks one at a time).
type contention struct {
	mu   sync.Mutex
	last map[string]map[string]time.Time // cluster -> holder -> when
}

func (c *contention) mark(cluster, holder string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]map[string]time.Time{}
	}
	byHolder := c.last[cluster]
	if byHolder == nil {
		byHolder = map[string]time.Time{}
		c.last[cluster] = byHolder
	}
	byHolder[holder] = now
}

// byOthers reports whether a holder other than holder contended for cluster within ContendedFor
// of now, forgetting older entries.
func (c *contention) byOthers(cluster, holder string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	byHolder := c.last[cluster]
	found := false
	for h, at := range byHolder { //determinism:ok the answer and the deletions do not depend on order
		switch {
		case now.Sub(at) >= ContendedFor:
			delete(byHolder, h)
		case h != holder:
			found = true
		}
	}
	if len(byHolder) == 0 {
		delete(c.last, cluster)
	}
	return found
}

// Ordered turns on coordination.queue: ordered: acquires that may wait (WaitMillis) are granted
// in arrival order on this replica, and acquires that may not are denied while others wait.
// Call it before serving.
func (a *API) Ordered() *API {
	a.queue = newOrderedQueue(a.env)
	return a
}

// Weighted makes the ordered queue weighted fair per worker (see orderedQueue): weights maps a
// lease holder (the authenticated worker name) to its weight, 1 to 100; a worker not listed
// weighs 1. Among workers that keep waiting, each one's share of grants approaches its weight's
// share; one worker's acquires keep their arrival order. Turns Ordered on; call before serving.
// Weights live in the control plane's config, so a worker cannot raise its own.
func (a *API) Weighted(weights map[string]int) *API {
	if a.queue == nil {
		a.Ordered()
	}
	a.queue.weighted(weights)
	return a
}

// NewAPI returns the capacity API. metrics may be nil.
func NewAPI(store CapacityStore, locks SweepCoordinator, e env.Env, metrics *Metrics) *API {
	return &API{store: store, locks: locks, env: e, metrics: metricsOrNew(metrics)}
}

// Endpoint is one POST path of the API and its handler, told the authenticated caller (the
// lease holder or lock owner; "" lets the body name it).
type Endpoint struct {
	Path  string
	Serve func(w http.ResponseWriter, r *http.Request, caller string)
}

// Endpoints lists the API's paths and handlers.
func (a *API) Endpoints() []Endpoint {
	return []Endpoint{
		{PathAcquire, a.serveAcquire},
		{PathRenew, a.serveRenew},
		{PathReleaseBatch, a.serveReleaseBatch},
		{PathSweepLockAcquire, a.serveSweepLockAcquire},
		{PathSweepLockRelease, a.serveSweepLockRelease},
	}
}

// NewAPIHandler serves the API without authentication: the caller names itself in the body
// (holder, owner). For tests, benchmarks and a trusted loopback; the control plane mounts the
// Endpoints behind its worker auth instead (node/controlplane.MountCapacity).
func NewAPIHandler(store CapacityStore, locks SweepCoordinator, e env.Env, metrics *Metrics) http.Handler {
	a := NewAPI(store, locks, e, metrics)
	mux := http.NewServeMux()
	for _, ep := range a.Endpoints() {
		mux.HandleFunc("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request) { ep.Serve(w, r, "") })
	}
	return mux
}

func (a *API) serveAcquire(w http.ResponseWriter, r *http.Request, caller string) {
	var req AcquireRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	holder := pick(caller, req.Holder)
	release := claimed(req.Release, caller)
	limit, ttl, err := a.terms(req.Cluster, req.Cap, millis(req.TTLMillis))
	if err != nil {
		a.refuse(w, "acquire", holder, err)
		return
	}
	var l Lease
	if a.queue != nil {
		// An ordered acquire may wait: free the carried leases first, or it would wait on them.
		if !a.releaseCarried(w, r, holder, release) {
			return
		}
		l, err = a.acquireOrdered(r.Context(), req.Cluster, holder, limit, ttl, millis(req.WaitMillis))
	} else {
		// Decide first, then free: a worker must not win back the slot it is releasing ahead of
		// workers polling for it (retry-mode fairness fell from 0.95 to 0.57 when it could).
		l, err = a.store.Acquire(r.Context(), req.Cluster, holder, limit, ttl, a.env.Now())
		if err == nil || errors.Is(err, ErrAtCapacity) {
			if _, rerr := a.store.ReleaseBatch(r.Context(), release); errors.Is(rerr, ErrNotHolder) {
				a.foreign("release", holder, rerr)
			} else if rerr != nil {
				// The worker takes them as landed; they expire and the sweeper frees them.
				a.env.Logger().Warn("capacity: releases carried on an acquire failed; the sweep will reclaim them", "leases", len(release), "err", rerr)
			}
		}
	}
	now := a.env.Now()
	switch {
	case err == nil:
		contended := a.contended.byOthers(req.Cluster, holder, now)
		transport.WriteJSON(w, http.StatusOK, MediaJSON, AcquireResponse{Granted: true, Lease: &l, Contended: &contended})
	case errors.Is(err, ErrAtCapacity):
		a.metrics.LeaseDenied.WithLabelValues(req.Cluster).Inc()
		a.contended.mark(req.Cluster, holder, now)
		contended := a.contended.byOthers(req.Cluster, holder, now)
		transport.WriteJSON(w, http.StatusOK, MediaJSON, AcquireResponse{Contended: &contended})
	default:
		a.fail(w, "acquire", err)
	}
}

// releaseCarried frees the leases carried on an acquire; false when it answered a failure.
func (a *API) releaseCarried(w http.ResponseWriter, r *http.Request, holder string, refs []LeaseRef) bool {
	if len(refs) == 0 {
		return true
	}
	n, err := a.store.ReleaseBatch(r.Context(), refs)
	if errors.Is(err, ErrNotHolder) {
		a.refuse(w, "release", holder, err)
		return false
	}
	if err != nil {
		a.fail(w, "release", err)
		return false
	}
	if n > 0 && a.queue != nil {
		a.queue.changed.Notify()
	}
	return true
}

func (a *API) serveRenew(w http.ResponseWriter, r *http.Request, caller string) {
	var req RenewRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	_, ttl, err := a.terms(req.Lease.Cluster(), 0, millis(req.TTLMillis))
	if err != nil {
		a.refuse(w, "renew", caller, err)
		return
	}
	l, err := a.store.Renew(r.Context(), req.Lease.As(caller), ttl, a.env.Now())
	if err != nil {
		a.refuse(w, "renew", caller, err)
		return
	}
	transport.WriteJSON(w, http.StatusOK, MediaJSON, RenewResponse{Lease: l})
}

func (a *API) serveReleaseBatch(w http.ResponseWriter, r *http.Request, caller string) {
	var req ReleaseBatchRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	n, err := a.store.ReleaseBatch(r.Context(), claimed(req.Leases, caller))
	if n > 0 && a.queue != nil {
		a.queue.changed.Notify() // the heads of the queues may get a slot now
	}
	if err != nil {
		a.refuse(w, "release", caller, err)
		return
	}
	transport.WriteJSON(w, http.StatusOK, MediaJSON, ReleaseBatchResponse{Released: n})
}

// refuse answers err like fail, and first counts and logs a refusal of the caller: a renewal
// or release of another worker's lease (403), or an unknown cluster.
func (a *API) refuse(w http.ResponseWriter, op, caller string, err error) {
	switch {
	case errors.Is(err, ErrNotHolder):
		a.foreign(op, caller, err)
	case errors.Is(err, ErrUnknownCluster):
		a.metrics.Refused.WithLabelValues(op, "unknown-cluster").Inc()
		a.env.Logger().Warn("capacity: refused a lease request for an unknown cluster", "op", op, "worker", caller, "err", err)
	}
	a.fail(w, op, err)
}

// foreign counts and logs a request for leases the caller does not hold.
func (a *API) foreign(op, caller string, err error) {
	a.metrics.Refused.WithLabelValues(op, "not-holder").Inc()
	a.env.Logger().Warn("capacity: refused a request for another worker's lease", "op", op, "worker", caller, "err", err)
}

func (a *API) serveSweepLockAcquire(w http.ResponseWriter, r *http.Request, caller string) {
	var req SweepLockRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	l, err := a.locks.AcquireSweepLock(r.Context(), req.Name, pick(caller, req.Owner), millis(req.TTLMillis), a.env.Now())
	switch {
	case err == nil:
		transport.WriteJSON(w, http.StatusOK, MediaJSON, SweepLockResponse{Granted: true, Lock: &l})
	case errors.Is(err, ErrLockHeld):
		transport.WriteJSON(w, http.StatusOK, MediaJSON, SweepLockResponse{})
	default:
		a.fail(w, "sweep-lock", err)
	}
}

func (a *API) serveSweepLockRelease(w http.ResponseWriter, r *http.Request, caller string) {
	var req SweepLockRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	if err := a.locks.ReleaseSweepLock(r.Context(), req.Name, pick(caller, req.Owner)); err != nil {
		a.fail(w, "sweep-lock", err)
		return
	}
	transport.WriteJSON(w, http.StatusOK, MediaJSON, SweepLockResponse{})
}

// fail answers a store error: 409 for a stale lease, 403 for another worker's, 400 for bad
// input, 503 otherwise.
func (a *API) fail(w http.ResponseWriter, op string, err error) {
	switch {
	case errors.Is(err, ErrNotHolder):
		transport.WriteError(w, http.StatusForbidden, err.Error(), "lease")
	case errors.Is(err, ErrStaleGeneration):
		transport.WriteError(w, http.StatusConflict, err.Error(), "lease")
	case errors.Is(err, ErrInvalid):
		transport.WriteError(w, http.StatusBadRequest, err.Error(), "")
	default:
		a.metrics.CoordinationFailures.WithLabelValues("store-" + op).Inc()
		a.env.Logger().Warn("capacity store failed", "op", op, "err", err)
		transport.WriteError(w, http.StatusServiceUnavailable, "capacity store unavailable", "")
	}
}

// DecodeRequest reads a JSON request body into v strictly; on failure it answers 400 and
// returns false.
func DecodeRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := transport.ReadBody(r, MediaJSON)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err = dec.Decode(v); err != nil {
			err = fmt.Errorf("decoding %T: %w", v, err)
		}
	}
	if err != nil {
		transport.WriteBadRequest(w, err)
		return false
	}
	return true
}

func pick(authenticated, claimed string) string {
	if authenticated != "" {
		return authenticated
	}
	return claimed
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

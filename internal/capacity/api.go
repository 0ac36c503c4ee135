package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/refusallog"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Worker API paths (POST, JSON bodies).
const (
	PathAcquire          = "/worker/capacity/acquire"
	PathRenew            = "/worker/capacity/renew"       // one lease (workers before renew-batch)
	PathRenewBatch       = "/worker/capacity/renew-batch" // up to RenewBatchMax leases
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
	// RequestID names this acquire (the worker's choice: letters, digits, '-', '_', at most
	// RequestIDMax bytes): the control plane keeps it with the lease it grants, so that an
	// acquire whose answer was lost can be asked again, or its lease freed.
	RequestID string `json:"requestId,omitempty"`
	// Retry: this acquire was sent before and its answer lost. While the lease granted to it is
	// held and live it is the answer (renewed for ttlMillis), taking no slot more; otherwise
	// the acquire is decided as a new one.
	Retry bool `json:"retry,omitempty"`
	// Settle: the worker gave up this acquire, whose answer was lost. The lease granted to it,
	// if any, is freed; nothing is granted (the answer is a denial).
	Settle bool `json:"settle,omitempty"`
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

// RenewBatchMax bounds the leases of one RenewBatchRequest.
const RenewBatchMax = 500

// RenewBatchRequest extends up to RenewBatchMax leases, each as a RenewRequest would.
type RenewBatchRequest struct {
	Leases    []LeaseRef `json:"leases"`
	TTLMillis int64      `json:"ttlMillis"`
}

// RenewBatchResponse answers each lease of a RenewBatchRequest, in request order.
type RenewBatchResponse struct {
	Results []RenewResult `json:"results"`
	// Uncontended lists the clusters of the renewed leases for which no other worker's acquire
	// was denied or had to wait within ContendedFor (AcquireResponse.Contended, for renewals):
	// a worker goes on reusing its leases of those. A cluster over its cap (lowered) is not
	// listed. Its other renewed leases' clusters are contended. Null or absent: the control
	// plane says nothing about contention (ordered mode, or one older than the field).
	Uncontended []string `json:"uncontended"`
}

// RenewResult is one lease's answer: the renewed lease, or the status and error a RenewRequest
// for it alone would have been answered (409 stale, 403 not held by the caller, 400, 503).
type RenewResult struct {
	ID     string `json:"id"`
	Lease  *Lease `json:"lease,omitempty"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
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
	store   CapacityStore
	locks   SweepCoordinator
	env     env.Env
	metrics *Metrics
	queue   *orderedQueue // nil unless Ordered
	limits  Limits        // nil: the requests' caps and TTLs are taken as they are (tests)
	// pollEvery is how often a waiting head asks the store without a wake-up (PollEvery).
	pollEvery time.Duration
	// denials is notified at every denial here, and at each one at another replica that a
	// DenialWatcher reports: held contention watches read the record again.
	denials env.Signal
	// heard: a DenialWatcher's watch is in place (WatchDenied), so held contention watches need
	// not poll the record for the other replicas' denials.
	heard atomic.Bool
	// served reports whether the caller (an authenticated holder) is given cluster; nil: every
	// caller is given every cluster (Served).
	served func(holder, cluster string) bool
	// mayWait admits one more waiting acquire of the caller (an authenticated holder), with
	// done to call when it ends; not ok: the acquire does not wait (MayWait). Nil: all may.
	mayWait func(holder string) (done func(), ok bool)
	// fleet is the id every granted lease carries (WithFleet); nil: none.
	fleet *Fleet
	// refusedLog is when refusals were last logged, by operation, reason and worker (refusedNow).
	refusedLog refusallog.Limiter[refusalKind]
}

// refusalKind is a kind of refusal logged once a minute: a worker's refused operation, for
// reason, and the line's message (one per reason, so it adds no kinds).
type refusalKind struct{ op, reason, worker, msg string }

// WithFleet makes every lease the API grants carry f's id (Lease.Fleet), for its engine tag.
// Call it before serving.
func (a *API) WithFleet(f *Fleet) *API {
	a.fleet = f
	return a
}

// MayWait bounds the waiting acquires of an ordered queue per caller: an acquire that asks to
// wait when mayWait says no more may is decided at once (granted if a slot is free and nobody
// waits, else denied). Call it before serving.
func (a *API) MayWait(mayWait func(holder string) (done func(), ok bool)) *API {
	a.mayWait = mayWait
	return a
}

// Served makes the API refuse (403, ErrNotServed) an authenticated caller's acquire of a
// cluster that served says it is not given. Call it before serving.
func (a *API) Served(served func(holder, cluster string) bool) *API {
	a.served = served
	return a
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

// Ordered turns on coordination.queue: ordered: acquires that may wait (WaitMillis) are granted
// in arrival order on this replica, and acquires that may not are denied while others wait.
// Call it before serving.
func (a *API) Ordered() *API {
	a.queue = newOrderedQueue()
	return a
}

// PollEvery sets how often an acquire at the head of the ordered queue asks the store again
// when nothing woke it (default 250 ms): what it waits at most for a slot that frees by
// expiring, or through another replica whose release no FreedWatcher reports. Call it before
// serving.
func (a *API) PollEvery(d time.Duration) *API {
	a.pollEvery = d
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

// Freed tells the API that leases were freed other than through its endpoints (the sweeper
// reclaiming expired or revoked ones on this replica): the ordered queue's heads of their
// clusters may get a slot now, and are woken instead of finding it at their next poll.
func (a *API) Freed(refs []LeaseRef) {
	if a.queue != nil && len(refs) > 0 {
		a.queue.released(refs)
	}
}

// AllClusters, among the clusters a FreedWatcher reports, stands for every cluster.
const AllClusters = "*"

// FreedWatcher is a lease store shared by several control-plane replicas that tells each one
// of the leases the others free (Postgres LISTEN/NOTIFY), so that an acquire waiting in one
// replica's ordered queue is granted when a slot frees anywhere, not at its next poll.
type FreedWatcher interface {
	// NotifyFreed makes the store announce every lease it frees to the other replicas' watches.
	NotifyFreed()
	// WatchFreed calls freed with the clusters of leases other replicas freed (AllClusters: any
	// cluster), until ctx ends or the watch fails. freed must not block.
	WatchFreed(ctx context.Context, freed func(clusters []string)) error
}

// WatchFreed wakes the ordered queue's heads of the clusters whose leases other replicas free,
// as w reports them, until ctx ends; a failed watch is retried a second later (the heads' polls
// cover the gap). It returns at once unless the queue is ordered.
func (a *API) WatchFreed(ctx context.Context, w FreedWatcher) {
	if a.queue == nil {
		return
	}
	for ctx.Err() == nil {
		err := w.WatchFreed(ctx, a.queue.freed)
		if ctx.Err() != nil {
			return
		}
		a.env.Logger().Warn("capacity: watching other replicas' freed leases failed; retrying (waiting acquires poll meanwhile)", "err", redact.Error(err))
		_ = a.env.Sleep(ctx, time.Second)
	}
}

// NewAPI returns the capacity API. metrics may be nil.
func NewAPI(store CapacityStore, locks SweepCoordinator, e env.Env, metrics *Metrics) *API {
	return &API{store: store, locks: locks, env: e, metrics: metricsOrNew(metrics), pollEvery: queuePollEvery, denials: e.NewSignal()}
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
		{PathRenewBatch, a.serveRenewBatch},
		{PathReleaseBatch, a.serveReleaseBatch},
		{PathWatch, a.serveWatch},
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
	data, err := workerapi.ReadBody(r, MediaJSON)
	var req AcquireRequest
	if err == nil {
		req, err = DecodeAcquireRequest(data, true) // DecodeRequest's answer, without reflection
	}
	if err != nil {
		a.badRequest(w, "acquire", caller, err)
		return
	}
	if err := notNegative(int64(req.Cap), req.TTLMillis, req.WaitMillis); err != nil {
		a.refuse(w, "acquire", caller, err)
		return
	}
	holder := pick(caller, req.Holder)
	// A malformed carried release refuses the whole call: deciding the acquire first would
	// grant a lease to a request that is then only half served.
	if err := CheckRefs(req.Release); err != nil {
		a.refuse(w, "acquire", caller, err)
		return
	}
	if err := checkNamed(req); err != nil {
		a.refuse(w, "acquire", caller, err)
		return
	}
	release := claimed(req.Release, caller)
	if req.Settle {
		// Before the configuration's checks: a lease of a cluster the worker is no longer
		// given must be freed all the same.
		if !a.releaseCarried(w, r, holder, release) {
			return
		}
		if err := a.settle(r.Context(), req.Cluster, holder, req.RequestID); err != nil {
			a.fail(w, "acquire", err)
			return
		}
		contended := true
		writeAcquireResponse(w, AcquireResponse{Contended: &contended})
		return
	}
	limit, ttl, err := a.terms(req.Cluster, req.Cap, millis(req.TTLMillis))
	if err == nil && caller != "" && a.served != nil && !a.served(caller, req.Cluster) {
		err = fmt.Errorf("%w %q: its labels do not satisfy the workerSelector that gives it", ErrNotServed, req.Cluster)
	}
	if err != nil {
		a.refuse(w, "acquire", holder, err)
		return
	}
	var l Lease
	var c Contention
	var known, regranted bool
	if req.Retry {
		if l, regranted, err = a.regrant(r.Context(), req.Cluster, holder, req.RequestID, ttl); err != nil {
			a.fail(w, "acquire", err)
			return
		}
	}
	switch {
	case regranted:
		// The answer the retried acquire lost: its lease, which already counts.
		if !a.releaseCarried(w, r, holder, release) {
			return
		}
		c, known = a.contention(r.Context(), req.Cluster, holder)
	case a.queue != nil:
		// An ordered acquire may wait: free the carried leases first, or it would wait on them.
		if !a.releaseCarried(w, r, holder, release) {
			return
		}
		wait := millis(req.WaitMillis)
		if wait > 0 && caller != "" && a.mayWait != nil {
			// A worker holds at most so many waiting acquires (each a request held open, on a
			// connection of its own over HTTP/1.1); beyond, one is answered at once.
			done, ok := a.mayWait(caller)
			if ok {
				defer done()
			} else {
				wait = 0
			}
		}
		l, err = a.acquireOrdered(r.Context(), req.Cluster, holder, req.RequestID, limit, ttl, wait)
		c, known = a.contention(r.Context(), req.Cluster, holder)
	default:
		c, known = a.contention(r.Context(), req.Cluster, holder)
		l, err = a.acquireRetry(r.Context(), c, req.Cluster, holder, req.RequestID, limit, ttl, release)
	}
	contended := !known || c.Others
	switch {
	case err == nil:
		a.markGranted(r.Context(), c, req.Cluster, holder)
		l.Fleet = a.fleet.ID(r.Context())
		writeAcquireResponse(w, AcquireResponse{Granted: true, Lease: &l, Contended: &contended})
	case errors.Is(err, ErrAtCapacity):
		a.metrics.LeaseDenied.WithLabelValues(req.Cluster).Inc()
		a.markDenied(r.Context(), req.Cluster, holder)
		writeAcquireResponse(w, AcquireResponse{Contended: &contended})
	default:
		a.fail(w, "acquire", err)
	}
}

// acquireRetry decides a retry-mode acquire on c, the cluster's waiting record read before it,
// then frees the leases it carries. Decide first, then free: a worker must not win back the
// slot it is releasing ahead of workers polling for it (fairness fell from 0.95 to 0.57 when
// it could); and a free slot stays free for the waiting workers ranked ahead (Contention.Yields).
func (a *API) acquireRetry(ctx context.Context, c Contention, cluster, holder, request string, limit int, ttl time.Duration, release []LeaseRef) (Lease, error) {
	var l Lease
	var err error
	switch {
	case c.Leases >= limit:
		// Full when read a moment ago: deny without a second round trip to the store (a slot
		// freed since then is asked for again within RetryAskEvery).
		err = ErrAtCapacity
	case c.Yields(limit):
		a.metrics.LeaseYielded.WithLabelValues(cluster).Inc()
		err = ErrAtCapacity
	default:
		l, err = a.acquire(ctx, cluster, holder, request, limit, ttl)
	}
	if err != nil && !errors.Is(err, ErrAtCapacity) {
		return l, err
	}
	_, rerr := a.store.ReleaseBatch(ctx, release)
	switch {
	case errors.Is(rerr, ErrNotHolder):
		// The call named leases the caller does not hold: refuse it whole, the grant too.
		a.foreign("release", holder, rerr)
		if err == nil {
			a.undoGrant(ctx, l)
		}
		return Lease{}, rerr
	case rerr != nil:
		// The worker takes them as landed; they expire and the sweeper frees them.
		a.env.Logger().Warn("capacity: releases carried on an acquire failed; the sweep will reclaim them", "leases", len(release), "err", redact.Error(rerr))
	}
	return l, err
}

// checkNamed validates an acquire's name and what it asks of it.
func checkNamed(req AcquireRequest) error {
	if err := CheckRequestID(req.RequestID); err != nil {
		return err
	}
	switch {
	case (req.Retry || req.Settle) && req.RequestID == "":
		return fmt.Errorf("%w: retry and settle name an acquire sent before: give its requestId", ErrInvalid)
	case req.Retry && req.Settle:
		return fmt.Errorf("%w: an acquire is retried or settled, not both", ErrInvalid)
	}
	return nil
}

// regrant answers a retried acquire with the lease its first sending was granted, renewed for
// ttl from now, while that lease is held, unrevoked and unexpired; false otherwise (the acquire
// is then decided as a new one).
func (a *API) regrant(ctx context.Context, cluster, holder, request string, ttl time.Duration) (Lease, bool, error) {
	l, ok, err := a.store.Named(ctx, cluster, holder, request)
	if err != nil || !ok || l.Revoked {
		return Lease{}, false, err
	}
	renewed, err := a.store.Renew(ctx, l.Ref().As(holder), ttl, a.env.Now())
	switch {
	case err == nil:
		a.metrics.LostAnswers.WithLabelValues(cluster, "regranted").Inc()
		return renewed, true, nil
	case errors.Is(err, ErrStaleGeneration), errors.Is(err, ErrNotHolder):
		return Lease{}, false, nil // expired, revoked or freed meanwhile
	}
	return Lease{}, false, err
}

// settle frees the lease holder's acquire request was granted, if it is held.
func (a *API) settle(ctx context.Context, cluster, holder, request string) error {
	l, ok, err := a.store.Named(ctx, cluster, holder, request)
	if err != nil || !ok {
		return err
	}
	// By its generation: a lease swept meanwhile is stale, never another one.
	refs := []LeaseRef{l.Ref().As(holder)}
	n, err := a.store.ReleaseBatch(ctx, refs)
	if err != nil && !errors.Is(err, ErrNotHolder) {
		return err
	}
	if n > 0 {
		a.metrics.LostAnswers.WithLabelValues(cluster, "settled").Inc()
		if a.queue != nil {
			a.queue.released(refs)
		}
	}
	return nil
}

// acquire asks the store for a lease, named by request when it is not "".
func (a *API) acquire(ctx context.Context, cluster, holder, request string, limit int, ttl time.Duration) (Lease, error) {
	if request == "" {
		return a.store.Acquire(ctx, cluster, holder, limit, ttl, a.env.Now())
	}
	return a.store.AcquireNamed(ctx, cluster, holder, request, limit, ttl, a.env.Now())
}

// undoGrant frees a lease granted to a call that is then refused.
func (a *API) undoGrant(ctx context.Context, l Lease) {
	if _, err := a.store.ReleaseBatch(ctx, []LeaseRef{l.Ref()}); err != nil {
		a.env.Logger().Warn("capacity: freeing a lease granted to a refused acquire failed; the sweep will reclaim it", "lease", l.ID, "err", redact.Error(err))
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
		a.queue.released(refs)
	}
	return true
}

func (a *API) serveRenew(w http.ResponseWriter, r *http.Request, caller string) {
	var req RenewRequest
	if !a.decode(w, r, "renew", caller, &req) {
		return
	}
	if err := notNegative(0, req.TTLMillis, 0); err != nil {
		a.refuse(w, "renew", caller, err)
		return
	}
	l, err := a.renew(r.Context(), caller, req.Lease, millis(req.TTLMillis))
	if err != nil {
		a.fail(w, "renew", err)
		return
	}
	workerapi.WriteJSON(w, http.StatusOK, MediaJSON, RenewResponse{Lease: l})
}

func (a *API) serveRenewBatch(w http.ResponseWriter, r *http.Request, caller string) {
	var req RenewBatchRequest
	if !a.decode(w, r, "renew", caller, &req) {
		return
	}
	if err := notNegative(0, req.TTLMillis, 0); err != nil {
		a.refuse(w, "renew", caller, err)
		return
	}
	if len(req.Leases) > RenewBatchMax {
		a.refuse(w, "renew", caller, fmt.Errorf("%w: %d leases in one renewal batch, at most %d", ErrInvalid, len(req.Leases), RenewBatchMax))
		return
	}
	out := RenewBatchResponse{Results: make([]RenewResult, len(req.Leases))}
	for i, ref := range req.Leases {
		res := RenewResult{ID: ref.ID}
		l, err := a.renew(r.Context(), caller, ref, millis(req.TTLMillis))
		if err == nil {
			res.Lease = &l
		} else {
			res.Status, res.Error = a.status("renew", err)
		}
		out.Results[i] = res
	}
	out.Uncontended = a.uncontended(r.Context(), req.Leases, out.Results, caller)
	workerapi.WriteJSON(w, http.StatusOK, MediaJSON, out)
}

// uncontended lists, in request order, the clusters of the leases renewed (results) that no
// other worker contends for (uncontendedOn). Nil (says nothing) in ordered mode, where workers
// reuse no lease (no waiting record is read); never nil otherwise.
func (a *API) uncontended(ctx context.Context, refs []LeaseRef, results []RenewResult, holder string) []string {
	if a.queue != nil {
		return nil
	}
	var renewed []string
	for i, ref := range refs {
		if results[i].Lease != nil {
			renewed = append(renewed, ref.Cluster())
		}
	}
	return a.uncontendedOf(ctx, renewed, holder)
}

// renew extends ref's lease for caller (its holder), with the TTL the control plane allows;
// a refusal is counted and logged.
func (a *API) renew(ctx context.Context, caller string, ref LeaseRef, ttl time.Duration) (Lease, error) {
	err := CheckRefs([]LeaseRef{ref})
	if err == nil {
		_, ttl, err = a.terms(ref.Cluster(), 0, ttl)
	}
	if err == nil {
		var l Lease
		if l, err = a.store.Renew(ctx, ref.As(caller), ttl, a.env.Now()); err == nil {
			return l, nil
		}
	}
	a.noteRefusal("renew", caller, err)
	return Lease{}, err
}

func (a *API) serveReleaseBatch(w http.ResponseWriter, r *http.Request, caller string) {
	data, err := workerapi.ReadBody(r, MediaJSON) // DecodeRequest, with the batch's own codec
	var req ReleaseBatchRequest
	if err == nil {
		req, err = DecodeReleaseBatchRequest(data)
	}
	if err != nil {
		a.badRequest(w, "release", caller, err)
		return
	}
	if err := CheckRefs(req.Leases); err != nil {
		a.refuse(w, "release", caller, err)
		return
	}
	n, err := a.store.ReleaseBatch(r.Context(), claimed(req.Leases, caller))
	if n > 0 && a.queue != nil {
		a.queue.released(req.Leases) // the heads of their clusters may get a slot now
	}
	if err != nil {
		a.refuse(w, "release", caller, err)
		return
	}
	writeReleased(w, ReleaseBatchResponse{Released: n})
}

// writeReleased writes workerapi.WriteJSON's answer, encoded without reflection.
func writeReleased(w http.ResponseWriter, resp ReleaseBatchResponse) {
	data := resp.AppendJSON(make([]byte, 0, 24))
	workerapi.SetContentType(w.Header(), MediaJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(data, '\n'))
}

// refuse answers err like fail, and first counts and logs a refusal of the caller.
func (a *API) refuse(w http.ResponseWriter, op, caller string, err error) {
	a.noteRefusal(op, caller, err)
	a.fail(w, op, err)
}

// noteRefusal counts and logs err if it refuses the caller: a renewal or release of a lease it
// does not hold (403), an unknown cluster, a lease no longer held under its generation (409: the
// sweep took it, or it was released), a request no worker sends (400).
func (a *API) noteRefusal(op, caller string, err error) {
	switch {
	case errors.Is(err, ErrNotHolder):
		a.foreign(op, caller, err)
	case errors.Is(err, ErrNotServed):
		a.refusedNow(op, "not-served", caller, "capacity: refused a worker's acquire of a cluster it is not given", err)
	case errors.Is(err, ErrUnknownCluster):
		a.refusedNow(op, "unknown-cluster", caller, "capacity: refused a lease request for an unknown cluster", err)
	case errors.Is(err, ErrStaleGeneration):
		a.refusedNow(op, "stale", caller, refusedMsg, err)
	case errors.Is(err, ErrInvalid):
		a.refusedNow(op, "invalid", caller, refusedMsg, err)
	}
}

// decode is DecodeRequest whose refusal is counted and logged as the caller's (badRequest).
func (a *API) decode(w http.ResponseWriter, r *http.Request, op, caller string, v any) bool {
	if err := workerapi.ReadJSON(r, MediaJSON, v); err != nil {
		a.badRequest(w, op, caller, err)
		return false
	}
	return true
}

// badRequest answers a body that is not the request (400 naming what was wrong, 415 for
// another media type), counted and logged as the caller's.
func (a *API) badRequest(w http.ResponseWriter, op, caller string, err error) {
	a.refusedNow(op, "bad-request", caller, refusedMsg, err)
	workerapi.WriteBadRequest(w, err)
}

// refusedMsg is the log line of a refusal that has no line of its own.
const refusedMsg = "capacity: refused a worker's lease request"

// refusedNow counts a refusal of caller's op for reason, and logs it as msg unless a line of its
// kind was written within the limiter's period (a minute); the next line says how many came
// meanwhile.
func (a *API) refusedNow(op, reason, caller, msg string, err error) {
	a.metrics.Refused.WithLabelValues(op, reason).Inc()
	if line, due := a.refusedLog.Note(refusalKind{op, reason, caller, msg}, "", err, a.env.Now()); due {
		a.logRefusal(line)
	}
}

// LogRefused writes the refusal lines due at now: of each kind with refusals not yet logged
// whose last line is a minute old. Without it, the count at the end of a worker's burst would
// be logged only at that kind's next refusal, which may never come; the control plane's tick
// calls it.
func (a *API) LogRefused(now time.Time) {
	for _, line := range a.refusedLog.Due(now) {
		a.logRefusal(line)
	}
}

func (a *API) logRefusal(line refusallog.Line[refusalKind]) {
	k := line.Kind
	a.env.Logger().Warn(k.msg, "op", k.op, "reason", k.reason, "worker", k.worker,
		"refused", line.Count, "since", line.Since, "err", redact.Error(line.Err), "nextLineAfter", refusallog.DefaultEvery)
}

// foreign counts and logs a request for leases the caller does not hold.
func (a *API) foreign(op, caller string, err error) {
	a.refusedNow(op, "not-holder", caller, "capacity: refused a request for another worker's lease", err)
}

func (a *API) serveSweepLockAcquire(w http.ResponseWriter, r *http.Request, caller string) {
	var req SweepLockRequest
	if !DecodeRequest(w, r, &req) {
		return
	}
	l, err := a.locks.AcquireSweepLock(r.Context(), req.Name, pick(caller, req.Owner), millis(req.TTLMillis), a.env.Now())
	switch {
	case err == nil:
		workerapi.WriteJSON(w, http.StatusOK, MediaJSON, SweepLockResponse{Granted: true, Lock: &l})
	case errors.Is(err, ErrLockHeld):
		workerapi.WriteJSON(w, http.StatusOK, MediaJSON, SweepLockResponse{})
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
	workerapi.WriteJSON(w, http.StatusOK, MediaJSON, SweepLockResponse{})
}

// fail answers a store error: 409 for a stale lease, 403 for another worker's, 400 for bad
// input, 503 otherwise.
func (a *API) fail(w http.ResponseWriter, op string, err error) {
	status, msg := a.status(op, err)
	field := ""
	if status == http.StatusForbidden || status == http.StatusConflict {
		field = "lease"
	}
	workerapi.WriteError(w, status, msg, field)
}

// status is the HTTP status and message that answer err (fail); a store failure is counted
// and logged, and its details stay in the log.
func (a *API) status(op string, err error) (int, string) {
	switch {
	case errors.Is(err, ErrNotHolder), errors.Is(err, ErrNotServed):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, ErrStaleGeneration):
		return http.StatusConflict, err.Error()
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest, err.Error()
	}
	a.metrics.CoordinationFailures.WithLabelValues("store-" + op).Inc()
	a.env.Logger().Warn("capacity store failed", "op", op, "err", redact.Error(err))
	return http.StatusServiceUnavailable, "capacity store unavailable"
}

// writeAcquireResponse writes workerapi.WriteJSON's answer, encoded without reflection.
func writeAcquireResponse(w http.ResponseWriter, resp AcquireResponse) {
	data := resp.AppendJSON(make([]byte, 0, 256))
	workerapi.SetContentType(w.Header(), MediaJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(data, '\n'))
}

// DecodeRequest reads a JSON request body into v strictly (workerapi.ReadJSON: trailing data,
// unknown fields and wrong types are refused); on failure it answers 400 (415 for another
// media type) naming the problem and returns false.
func DecodeRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := workerapi.ReadJSON(r, MediaJSON, v); err != nil {
		workerapi.WriteBadRequest(w, err)
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

// notNegative refuses a negative cap, TTL or wait: no worker asks for one (0 takes the
// configured term), so it is a broken or hostile client, told which field was wrong.
func notNegative(limit, ttlMillis, waitMillis int64) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"cap", limit}, {"ttlMillis", ttlMillis}, {"waitMillis", waitMillis}} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s %d: must be 0 or more", ErrInvalid, f.name, f.v)
		}
	}
	return nil
}

// millis is ms milliseconds; past time.Duration's range it is the longest Duration (the
// caller's bound applies), never a product wrapped round to a short or negative one (a TTL
// asked as 18446744073710 ms was granted for 0.45 ms).
func millis(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

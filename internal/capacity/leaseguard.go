package capacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// Coordination modes and policies (the strings of config's queryflux.coordination).
const (
	ModeControlPlane = "controlPlane" // leases from a LeaseClient (the control plane, or a store)
	ModeLocal        = "local"        // a LocalGuard only

	OnUnavailableFailClosed  = "failClosed"  // no lease, no query
	OnUnavailableLocalLimits = "localLimits" // fall back to this node's own count against the cap

	OnLeaseLostCancel  = "cancel"  // a lease that cannot be renewed in time cancels its query
	OnLeaseLostOverrun = "overrun" // ... or lets it finish, counted in queryflux_capacity_overrun_total
)

// Defaults of GuardOptions.
const (
	LeaseTTLDefault       = 30 * time.Second
	DriftMarginDefault    = 2 * time.Second
	AcquireTimeoutDefault = 5 * time.Second
	// unreachableHold is how long, after an acquire failed to reach the control plane, new
	// acquires apply the onUnavailable policy at once instead of each waiting out its own
	// timeout: under a partition that swallows requests, localLimits would otherwise admit one
	// query per AcquireTimeout. One acquire probes the control plane again after the hold.
	unreachableHold = time.Second
	releaseBatchMax = 500
	// releaseLinger is how long queued releases wait for an acquire to carry them (a
	// ReleasingAcquirer client) before the flusher sends them on their own.
	releaseLinger    = 2 * time.Millisecond
	releaseQueueMax  = 100000
	keeperActionsMax = 10000 // renewals per keeper round

	// leaseReuseWindow is how long after the control plane granted a lease this node may hand
	// it from one finished query to the next without asking again (idle reuse). One acquire
	// round trip over loopback costs ~0.1-0.15 ms, so a busy slot whose queries take about as
	// long is asked for ~200 times less often; and a busy worker still goes back to the control
	// plane at least once per window per slot (a lease past its window is released on Release),
	// well inside the proxy core's retry back-off (2 ms doubling to 500 ms), so the first grant
	// after another worker was denied tells this one to stop keeping leases idle.
	leaseReuseWindow = 20 * time.Millisecond
	// idleLeaseHold is how long a released lease waits idle for the next acquire of its cluster
	// before it is released the normal way (or sooner, at the end of its reuse window).
	idleLeaseHold = 2 * time.Millisecond
)

// GuardOptions configure a LeaseGuard. Env, Client and Holder are required.
type GuardOptions struct {
	Env    env.Env
	Client LeaseClient // the control plane (Remote) or a CapacityStore
	Holder string      // this node's name: the holder of its leases

	OnUnavailable string // failClosed (default) | localLimits
	OnLeaseLost   string // cancel (default) | overrun

	// LeaseTTL is the lease lifetime asked for; the control plane reclaims a lease TTL after its
	// last renewal. DriftMargin is how much sooner this node stops counting on it: clocks may run
	// at different rates, and a fenced query must be gone before its slot is granted again.
	LeaseTTL    time.Duration
	DriftMargin time.Duration
	// RenewEvery is how often leases are renewed (default LeaseTTL/3).
	RenewEvery time.Duration
	// AcquireTimeout bounds one acquire, renew or release round trip (default 5 s).
	AcquireTimeout time.Duration
	// AcquireWaits says the Client's acquires long-poll at the control plane (Remote with
	// WithAcquireWait, coordination.queue: ordered): an acquire is sent even while this node's
	// releases of the cluster are in flight, since the control plane grants it as they land.
	// Otherwise such an acquire is denied here, and OnFreed's callbacks say when to ask again.
	AcquireWaits bool
	Metrics      *Metrics
}

func (o GuardOptions) withDefaults() GuardOptions {
	if o.OnUnavailable == "" {
		o.OnUnavailable = OnUnavailableFailClosed
	}
	if o.OnLeaseLost == "" {
		o.OnLeaseLost = OnLeaseLostCancel
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = LeaseTTLDefault
	}
	if o.DriftMargin == 0 {
		o.DriftMargin = DriftMarginDefault
	}
	if o.RenewEvery == 0 {
		o.RenewEvery = o.LeaseTTL / 3
	}
	if o.AcquireTimeout == 0 {
		o.AcquireTimeout = AcquireTimeoutDefault
	}
	o.Metrics = metricsOrNew(o.Metrics)
	return o
}

func (o GuardOptions) validate() error {
	switch {
	case o.Env == nil:
		return fmt.Errorf("%w: GuardOptions.Env is nil", ErrInvalid)
	case o.Client == nil:
		return fmt.Errorf("%w: GuardOptions.Client is nil", ErrInvalid)
	case o.OnUnavailable != OnUnavailableFailClosed && o.OnUnavailable != OnUnavailableLocalLimits:
		return fmt.Errorf("%w: onUnavailable %q must be failClosed or localLimits", ErrInvalid, o.OnUnavailable)
	case o.OnLeaseLost != OnLeaseLostCancel && o.OnLeaseLost != OnLeaseLostOverrun:
		return fmt.Errorf("%w: onLeaseLost %q must be cancel or overrun", ErrInvalid, o.OnLeaseLost)
	case o.DriftMargin < 0 || 2*o.DriftMargin >= o.LeaseTTL:
		return fmt.Errorf("%w: drift margin %v must be in [0, leaseTTL/2 = %v)", ErrInvalid, o.DriftMargin, o.LeaseTTL/2)
	case o.RenewEvery <= 0 || o.RenewEvery >= o.LeaseTTL-o.DriftMargin:
		return fmt.Errorf("%w: renew interval %v must be positive and below leaseTTL - driftMargin", ErrInvalid, o.RenewEvery)
	case o.AcquireTimeout <= 0:
		return fmt.Errorf("%w: acquire timeout %v must be positive", ErrInvalid, o.AcquireTimeout)
	}
	if err := CheckTTL(o.LeaseTTL); err != nil {
		return err
	}
	return checkName("holder", o.Holder)
}

// LeaseGuard is the store-backed Guard: every slot is a lease from its LeaseClient, renewed by
// a keeper task and fenced locally (lost) once it could not be renewed for LeaseTTL minus
// DriftMargin, i.e. before the control plane may reclaim it. Releases are queued and sent in
// batches by a flusher task. Start the tasks with Start.
//
// Idle reuse: when the client is a ContentionAcquirer and acquires do not wait at the control
// plane (AcquireWaits false), a released lease may be kept idle for its cluster for up to
// idleLeaseHold, and the next Acquire of that cluster takes it without a round trip. Only while
// the lease is within leaseReuseWindow of its grant, at least RenewEvery from its fence time,
// and the control plane's last answer for the cluster said no other worker was denied or queued
// there. An idle-reaper task releases idle leases not taken in time, and all of them on Stop.
type LeaseGuard struct {
	o        GuardOptions
	released env.Signal // a release was queued
	idled    env.Signal // a lease went idle while the idle reaper had no deadline
	fallback *LocalGuard
	reuse    bool // idle reuse is on (see above)

	mu      sync.Mutex
	nextID  uint64
	slots   map[uint64]*leaseSlot // live slots (leased), by id
	held    map[string]int        // leased slots per cluster, live or fenced, until Release
	queue   []queuedRelease
	dropped uint64 // releases dropped because the queue was full or they outlived their lease
	// pending counts, per cluster, releases queued or in flight: the control plane still counts
	// those leases, so an acquire that they would push over the cap is denied without asking.
	pending map[string]int
	// asking counts, per cluster, this node's acquires in flight to the control plane: each may
	// come back with a lease, so they count against the cap like held ones. Otherwise acquires
	// racing one another (or a local fallback admission) could together take this node past it.
	asking       map[string]int
	flushFailing bool     // the last batch failed: pending releases may never land, ask anyway
	freed        []func() // run after every release batch (landed or failed): wake waiters
	// unreachableUntil: the control plane did not answer an acquire; until then, don't ask.
	unreachableUntil time.Time
	// idle holds released leases kept for the next acquire of their cluster (counted as held),
	// idleN how many in all. uncontended is set for a cluster while the control plane's last
	// answer for it said no other worker contends for it; absent means keep nothing idle.
	idle        map[string][]idleLease
	idleN       int
	reaperAt    time.Time // when the idle reaper wakes next (zero: when told through idled)
	uncontended map[string]bool
	stopped     bool // the guard's tasks ended: keep nothing idle
}

// idleLease is a released slot's lease kept for the next acquire of its cluster.
type idleLease struct {
	lease     Lease
	fenceAt   time.Time
	renewAt   time.Time
	grantedAt time.Time // when the acquire that granted it was sent: its reuse window starts here
	until     time.Time // released the normal way from here on
	affinity  uint64    // who released it (query.Affinity of its acquire): taken by them first
}

type queuedRelease struct {
	ref     LeaseRef
	cluster string
	until   time.Time // after this the control plane has reclaimed the lease anyway
}

type leaseSlot struct {
	g       *LeaseGuard
	id      uint64
	lease   Lease
	fenceAt time.Time // local clock: stop counting on the lease from here on
	renewAt time.Time // local clock: next renewal due
	// grantedAt is when the acquire that granted the lease was sent (kept across reuses).
	grantedAt time.Time
	affinity  uint64 // query.Affinity of the acquire's context

	// under g.mu
	released bool
	lost     bool // fenced, query told to stop (cancel)
	overrun  bool // fenced, query kept (overrun)
	onLost   []func()
}

var _ Guard = (*LeaseGuard)(nil)

// NewLeaseGuard returns a guard; call Start to run its keeper and release flusher.
func NewLeaseGuard(o GuardOptions) (*LeaseGuard, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	_, reports := o.Client.(ContentionAcquirer)
	return &LeaseGuard{
		o:        o,
		released: o.Env.NewSignal(),
		idled:    o.Env.NewSignal(),
		fallback: NewLocalGuard(),
		// Ordered mode promises arrival order at the control plane: an idle lease taken here
		// would jump acquires already queued there until the next grant said so, so no reuse.
		reuse:       reports && !o.AcquireWaits,
		slots:       map[uint64]*leaseSlot{},
		held:        map[string]int{},
		pending:     map[string]int{},
		asking:      map[string]int{},
		idle:        map[string][]idleLease{},
		uncontended: map[string]bool{},
	}, nil
}

// Start runs the keeper (renewals, self-fencing), the release flusher and the idle reaper until
// ctx ends. When ctx ends the idle reaper releases the idle leases and flushes queued releases
// once more (bounded by AcquireTimeout), so that a stopped node leaves nothing to the sweep.
func (g *LeaseGuard) Start(ctx context.Context) {
	g.o.Env.Go(ctx, "capacity-keeper", g.runKeeper)
	g.o.Env.Go(ctx, "capacity-release-flusher", g.runFlusher)
	g.o.Env.Go(ctx, "capacity-idle-reaper", g.runIdleReaper)
}

// Acquire implements Guard: an idle lease of the cluster if there is one (no round trip), or
// one round trip to the LeaseClient, bounded by AcquireTimeout. When the client is a
// ReleasingAcquirer, the queued releases ride on that round trip.
func (g *LeaseGuard) Acquire(ctx context.Context, cluster string, limit int) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	affinity := query.Affinity(ctx)
	if s := g.takeIdle(cluster, limit, affinity); s != nil {
		g.o.Metrics.LeaseReused.WithLabelValues(cluster).Inc()
		return s, nil
	}
	// Carried releases still count: the control plane decides a retry-mode acquire before it
	// frees them, so a worker never wins back its own slot ahead of others.
	carry := g.takeCarry()
	if limit < 1 || !g.reserve(cluster, limit) {
		// This node alone fills the cap (or will until its releases land, when OnFreed's
		// callbacks run): no need to ask.
		g.putBack(carry)
		g.o.Metrics.LeaseDenied.WithLabelValues(cluster).Inc()
		return nil, ErrAtCapacity
	}
	sent := g.o.Env.Now()
	if g.unreachable(sent) {
		g.putBack(carry)
		g.unreserve(cluster, nil, sent)
		return g.unavailable(cluster, limit, errors.New("the control plane did not answer the last acquire"))
	}
	actx, cancel := g.o.Env.WithTimeout(ctx, g.o.AcquireTimeout)
	lease, err := g.request(actx, cluster, limit, sent, carry)
	cancel()
	if err == nil {
		s := g.unreserve(cluster, &lease, sent)
		if s.Lost() {
			// The answer came back too late to count on (this node was frozen, or the round
			// trip outlived the lease): give it back and let the caller ask again.
			s.Release()
			return nil, ErrAtCapacity
		}
		s.affinity = affinity // read by Release only, which its holder calls after this
		return s, nil
	}
	g.unreserve(cluster, nil, sent)
	switch {
	case errors.Is(err, ErrAtCapacity):
		g.o.Metrics.LeaseDenied.WithLabelValues(cluster).Inc()
		return nil, ErrAtCapacity
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrInvalid):
		return nil, err
	}
	g.o.Metrics.CoordinationFailures.WithLabelValues("acquire").Inc()
	g.mu.Lock()
	g.unreachableUntil = g.o.Env.Now().Add(unreachableHold)
	g.mu.Unlock()
	return g.unavailable(cluster, limit, err)
}

// request sends one acquire (carrying carry) and settles the carried releases: landed after a
// grant or denial, put back for the flusher otherwise.
func (g *LeaseGuard) request(ctx context.Context, cluster string, limit int, sent time.Time, carry []queuedRelease) (Lease, error) {
	lease, err := g.ask(ctx, cluster, limit, sent, refsOf(carry))
	if len(carry) == 0 {
		return lease, err
	}
	if err == nil || errors.Is(err, ErrAtCapacity) {
		g.landed(carry)
	} else {
		g.putBack(carry)
	}
	if errors.Is(err, ErrInvalid) {
		// A control plane older than the release field refuses it: ask plainly, and the
		// flusher sends the releases on their own.
		lease, err = g.ask(ctx, cluster, limit, sent, nil)
	}
	return lease, err
}

// ask is one acquire round trip, releases riding on it when there are any. A ContentionAcquirer
// also says whether other workers contend for the cluster, which decides idle reuse.
func (g *LeaseGuard) ask(ctx context.Context, cluster string, limit int, sent time.Time, release []LeaseRef) (Lease, error) {
	if ca, ok := g.o.Client.(ContentionAcquirer); ok {
		lease, contended, err := ca.AcquireContended(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent, release)
		if err == nil || errors.Is(err, ErrAtCapacity) {
			g.contention(cluster, contended)
		}
		return lease, err
	}
	if len(release) > 0 {
		return g.o.Client.(ReleasingAcquirer).AcquireReleasing(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent, release)
	}
	return g.o.Client.Acquire(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent)
}

// unreachable reports whether the control plane failed an acquire less than unreachableHold ago.
func (g *LeaseGuard) unreachable(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return now.Before(g.unreachableUntil)
}

// unavailable applies the onUnavailable policy to an acquire the control plane cannot answer.
func (g *LeaseGuard) unavailable(cluster string, limit int, err error) (Slot, error) {
	if g.o.OnUnavailable == OnUnavailableLocalLimits {
		return g.acquireLocal(cluster, limit)
	}
	return nil, fmt.Errorf("%w: acquire on %s: %v", ErrUnavailable, cluster, err)
}

// takeCarry takes the queued releases (one batch at most) for an acquire to carry, when the
// client can. They stay pending until landed or put back.
func (g *LeaseGuard) takeCarry() []queuedRelease {
	if _, ok := g.o.Client.(ReleasingAcquirer); !ok {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := min(len(g.queue), releaseBatchMax)
	if n == 0 {
		return nil
	}
	carry := append([]queuedRelease(nil), g.queue[:n]...)
	g.queue = g.queue[n:]
	return carry
}

// putBack returns carried releases to the front of the queue for the flusher.
func (g *LeaseGuard) putBack(carry []queuedRelease) {
	if len(carry) == 0 {
		return
	}
	g.mu.Lock()
	g.queue = append(carry, g.queue...)
	g.mu.Unlock()
	g.released.Notify()
}

// landed counts releases that reached the control plane, and wakes OnFreed's callbacks.
func (g *LeaseGuard) landed(batch []queuedRelease) {
	g.mu.Lock()
	g.flushFailing = false
	for _, q := range batch {
		g.unpend(q.cluster)
	}
	g.mu.Unlock()
	g.wakeFreed()
}

func refsOf(batch []queuedRelease) []LeaseRef {
	refs := make([]LeaseRef, len(batch))
	for i, q := range batch {
		refs[i] = q.ref
	}
	return refs
}

// acquireLocal grants a slot counted by this node only, leased slots included.
// reserve counts an acquire about to ask the control plane, unless this node's leases (held,
// idle, releasing, being asked for) and local slots already fill limit.
func (g *LeaseGuard) reserve(cluster string, limit int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.occupiedLocked(cluster)+g.fallback.Running(cluster) >= limit {
		return false
	}
	g.asking[cluster]++
	return true
}

// unreserve ends a reserved acquire: with the lease it was granted (returned as a slot, in the
// same critical section, so the count never drops in between) or without one (nil).
func (g *LeaseGuard) unreserve(cluster string, l *Lease, sent time.Time) *leaseSlot {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asking[cluster]--
	if g.asking[cluster] < 0 {
		panic(fmt.Sprintf("capacity: acquires in flight on %q went negative", cluster))
	}
	if g.asking[cluster] == 0 {
		delete(g.asking, cluster)
	}
	if l == nil {
		return nil
	}
	return g.addLocked(*l, sent)
}

func (g *LeaseGuard) acquireLocal(cluster string, limit int) (Slot, error) {
	g.mu.Lock()
	leased := g.held[cluster] + len(g.idle[cluster]) + g.asking[cluster]
	g.mu.Unlock()
	if !g.fallback.take(cluster, limit-leased) {
		g.o.Metrics.LeaseDenied.WithLabelValues(cluster).Inc()
		return nil, ErrAtCapacity
	}
	return &localSlot{g: g.fallback, cluster: cluster}, nil
}

// addLocked makes a slot of lease l, acquired by a request sent at sent (under g.mu).
func (g *LeaseGuard) addLocked(l Lease, sent time.Time) *leaseSlot {
	g.nextID++
	fenceAt, renewAt := g.terms(sent, l)
	s := &leaseSlot{g: g, id: g.nextID, lease: l, fenceAt: fenceAt, renewAt: renewAt, grantedAt: sent}
	g.slots[s.id] = s
	g.held[l.Cluster]++
	return s
}

// terms are when a lease l acquired or renewed by a request sent at sent stops counting, and
// when it is to be renewed: the control plane stamped it no earlier than sent with the TTL it
// granted (its own configuration's, when shorter than LeaseTTL) to live.
func (g *LeaseGuard) terms(sent time.Time, l Lease) (fenceAt, renewAt time.Time) {
	ttl, every := g.o.LeaseTTL, g.o.RenewEvery
	if granted := l.TTL(); granted > 0 && granted < ttl {
		every = max(every*granted/ttl, time.Millisecond)
		ttl = granted
	}
	return sent.Add(ttl - min(g.o.DriftMargin, ttl/2)), sent.Add(every)
}

// Held is the number of leased slots this node holds on cluster (fenced ones until released,
// idle ones included: the control plane counts them).
func (g *LeaseGuard) Held(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[cluster] + len(g.idle[cluster])
}

// Idle is the number of idle leases this node keeps for cluster.
func (g *LeaseGuard) Idle(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.idle[cluster])
}

// occupied is the number of slots of cluster the control plane counts for this node as far as
// it knows: leases held (idle ones too), and releases not yet landed unless the flusher is
// failing (then the control plane may be unreachable and the acquire must go on to its
// onUnavailable policy) or acquires wait at the control plane anyway.
func (g *LeaseGuard) occupied(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.occupiedLocked(cluster)
}

func (g *LeaseGuard) occupiedLocked(cluster string) int {
	n := g.held[cluster] + len(g.idle[cluster]) + g.asking[cluster]
	if !g.flushFailing && !g.o.AcquireWaits {
		n += g.pending[cluster]
	}
	return n
}

// OnFreed registers fn to run after every release batch, whether it landed or failed: a caller
// that was denied (ErrAtCapacity) may find a slot now. fn runs in the flusher task and must not
// block (env.Signal.Notify). The proxy core registers its wake-up here.
func (g *LeaseGuard) OnFreed(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freed = append(g.freed, fn)
}

// Local is the number of fallback (unleased) slots this node holds on cluster.
func (g *LeaseGuard) Local(cluster string) int { return g.fallback.Running(cluster) }

// PendingReleases is the number of releases queued and not yet sent.
func (g *LeaseGuard) PendingReleases() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// Release implements Slot. The lease is kept idle for the next acquire of its cluster when
// idle reuse allows (then OnFreed's callbacks run at once: a waiter may take it), or queued for
// release.
func (s *leaseSlot) Release() {
	g := s.g
	now := g.o.Env.Now()
	g.mu.Lock()
	if s.released {
		g.mu.Unlock()
		panic(fmt.Sprintf("capacity: slot of lease %s released twice", s.lease.ID))
	}
	s.released = true
	delete(g.slots, s.id)
	g.held[s.lease.Cluster]--
	if g.held[s.lease.Cluster] < 0 {
		panic(fmt.Sprintf("capacity: held count of %q went negative", s.lease.Cluster))
	}
	if g.held[s.lease.Cluster] == 0 {
		delete(g.held, s.lease.Cluster)
	}
	if !s.lost && !s.overrun && g.reusable(s.lease.Cluster, s.grantedAt, s.fenceAt, now) {
		first := g.keepIdle(idleLease{lease: s.lease, fenceAt: s.fenceAt, renewAt: s.renewAt, grantedAt: s.grantedAt,
			until: minTime(now.Add(idleLeaseHold), s.grantedAt.Add(leaseReuseWindow)), affinity: s.affinity})
		g.mu.Unlock()
		if first {
			g.idled.Notify()
		}
		g.wakeFreed()
		return
	}
	// Even a fenced lease is released: the control plane may still hold it (one-way partition).
	g.queueRelease(s.lease, s.fenceAt)
	g.mu.Unlock()
	g.released.Notify()
}

// queueRelease queues the release of lease l for the flusher or the next acquire (under g.mu).
func (g *LeaseGuard) queueRelease(l Lease, fenceAt time.Time) {
	if len(g.queue) >= releaseQueueMax {
		g.dropped++
		return
	}
	g.queue = append(g.queue, queuedRelease{ref: l.Ref(), cluster: l.Cluster, until: fenceAt.Add(2 * g.o.DriftMargin)})
	g.pending[l.Cluster]++
}

// Lost implements Slot.
//
// A slot also counts as lost once its fence time has passed, before the keeper has fenced it:
// a node that was frozen (SIGSTOP, a long pause) must not start work under a lease that the
// control plane may have reclaimed meanwhile, whichever of its tasks runs first.
func (s *leaseSlot) Lost() bool {
	now := s.g.o.Env.Now()
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.lost || (!s.overrun && !now.Before(s.fenceAt))
}

// OnLost implements Slot.
func (s *leaseSlot) OnLost(fn func()) {
	s.g.mu.Lock()
	if !s.lost {
		s.onLost = append(s.onLost, fn)
		s.g.mu.Unlock()
		return
	}
	s.g.mu.Unlock()
	fn()
}

// Lease is the slot's lease as last granted or renewed.
func (s *leaseSlot) Lease() Lease {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.lease
}

// ------------------------------------------------------------------------------------ keeper

func (g *LeaseGuard) runKeeper(ctx context.Context) {
	for ctx.Err() == nil {
		next := g.Keep(ctx)
		wait := min(next.Sub(g.o.Env.Now()), g.o.RenewEvery)
		if err := g.o.Env.Sleep(ctx, max(wait, time.Millisecond)); err != nil {
			return
		}
	}
}

// Keep does the keeper's work that is due now: fence leases past their fence time, renew
// leases whose renewal is due. It returns when it next has work. The keeper task calls it;
// tests may too.
func (g *LeaseGuard) Keep(ctx context.Context) time.Time {
	for range keeperActionsMax {
		now := g.o.Env.Now()
		g.fence(now)
		s, fenceFirst := g.dueRenewal(now)
		if s == nil || ctx.Err() != nil {
			break
		}
		g.renew(ctx, s, fenceFirst)
	}
	return g.nextWork()
}

// fence drops every live lease whose fence time has come.
func (g *LeaseGuard) fence(now time.Time) {
	var callbacks []func()
	g.mu.Lock()
	for _, id := range g.sortedIDs() {
		s := g.slots[id]
		if s.lost || s.overrun || now.Before(s.fenceAt) {
			continue
		}
		if g.o.OnLeaseLost == OnLeaseLostOverrun {
			s.overrun = true
			g.o.Metrics.Overrun.WithLabelValues(s.lease.Cluster).Inc()
			g.o.Metrics.LeasesLost.WithLabelValues(s.lease.Cluster, OnLeaseLostOverrun).Inc()
			continue
		}
		s.lost = true
		callbacks = append(callbacks, s.onLost...)
		s.onLost = nil
		g.o.Metrics.LeasesLost.WithLabelValues(s.lease.Cluster, OnLeaseLostCancel).Inc()
	}
	g.mu.Unlock()
	for _, fn := range callbacks {
		fn()
	}
}

// dueRenewal returns the live slot whose renewal is most overdue, and the earliest fence time
// of all live slots (a renewal must not wait past it).
func (g *LeaseGuard) dueRenewal(now time.Time) (*leaseSlot, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var due *leaseSlot
	var fenceFirst time.Time
	for _, id := range g.sortedIDs() {
		s := g.slots[id]
		if s.lost || s.overrun {
			continue
		}
		if fenceFirst.IsZero() || s.fenceAt.Before(fenceFirst) {
			fenceFirst = s.fenceAt
		}
		if !now.Before(s.renewAt) && (due == nil || s.renewAt.Before(due.renewAt)) {
			due = s
		}
	}
	return due, fenceFirst
}

func (g *LeaseGuard) renew(ctx context.Context, s *leaseSlot, fenceFirst time.Time) {
	sent := g.o.Env.Now()
	g.mu.Lock()
	ref := s.lease.Ref()
	g.mu.Unlock()
	timeout := min(g.o.AcquireTimeout, fenceFirst.Sub(sent))
	rctx, cancel := g.o.Env.WithTimeout(ctx, max(timeout, time.Millisecond))
	l, err := g.o.Client.Renew(rctx, ref, g.o.LeaseTTL, sent)
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil:
		s.lease = l
		s.fenceAt, s.renewAt = g.terms(sent, l)
	case errors.Is(err, ErrStaleGeneration):
		s.fenceAt = sent // the control plane no longer has it: fence at once
	default:
		g.o.Metrics.CoordinationFailures.WithLabelValues("renew").Inc()
		// Retry soon, but leave room for the other leases' renewals.
		s.renewAt = g.o.Env.Now().Add(max(g.o.RenewEvery/10, time.Millisecond))
	}
}

// nextWork is the earliest renewal or fence time of the live slots (zero when none).
func (g *LeaseGuard) nextWork() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	var next time.Time
	for _, id := range g.sortedIDs() {
		s := g.slots[id]
		if s.lost || s.overrun {
			continue
		}
		for _, t := range []time.Time{s.renewAt, s.fenceAt} {
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
	}
	if next.IsZero() {
		next = g.o.Env.Now().Add(g.o.RenewEvery)
	}
	return next
}

// sortedIDs lists live slot ids in order (under g.mu), so the keeper's order never depends on
// map iteration.
func (g *LeaseGuard) sortedIDs() []uint64 {
	ids := make([]uint64, 0, len(g.slots))
	for id := range g.slots {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// ----------------------------------------------------------------------------------- flusher

func (g *LeaseGuard) runFlusher(ctx context.Context) {
	_, carries := g.o.Client.(ReleasingAcquirer)
	for ctx.Err() == nil {
		seen := g.released.Seq()
		if carries && g.PendingReleases() > 0 {
			// Give the next acquire a moment to carry these releases on its own round trip.
			if g.o.Env.Sleep(ctx, releaseLinger) != nil {
				return
			}
		}
		if g.Flush(ctx) {
			continue
		}
		if g.PendingReleases() > 0 { // the control plane did not answer: back off
			if g.o.Env.Sleep(ctx, env.Jitter(g.o.Env.Rand(), time.Second, 0.2)) != nil {
				return
			}
			continue
		}
		if g.released.Wait(ctx, seen) != nil {
			return
		}
	}
}

// Flush sends one batch of queued releases. It reports whether it sent one successfully.
// A failed batch goes back to the queue, minus the releases whose leases have expired anyway.
func (g *LeaseGuard) Flush(ctx context.Context) bool {
	g.mu.Lock()
	n := min(len(g.queue), releaseBatchMax)
	batch := append([]queuedRelease(nil), g.queue[:n]...)
	g.queue = g.queue[n:]
	g.mu.Unlock()
	if n == 0 {
		return false
	}
	fctx, cancel := g.o.Env.WithTimeout(ctx, g.o.AcquireTimeout)
	_, err := g.o.Client.ReleaseBatch(fctx, refsOf(batch))
	cancel()
	if err == nil {
		g.landed(batch)
		return true
	}
	defer g.wakeFreed()
	g.o.Metrics.CoordinationFailures.WithLabelValues("release").Inc()
	now := g.o.Env.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushFailing = true
	var keep []queuedRelease
	for _, q := range batch {
		if now.Before(q.until) {
			keep = append(keep, q)
		} else {
			g.dropped++
			g.unpend(q.cluster)
		}
	}
	g.queue = append(keep, g.queue...)
	return false
}

// unpend counts one release of cluster as no longer pending (under g.mu).
func (g *LeaseGuard) unpend(cluster string) {
	g.pending[cluster]--
	switch {
	case g.pending[cluster] < 0:
		panic(fmt.Sprintf("capacity: pending release count of %q went negative", cluster))
	case g.pending[cluster] == 0:
		delete(g.pending, cluster)
	}
}

// wakeFreed runs the OnFreed callbacks (not under g.mu).
func (g *LeaseGuard) wakeFreed() {
	g.mu.Lock()
	fns := g.freed
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// ------------------------------------------------------------------------------- idle reuse

// ContentionAcquirer is a ReleasingAcquirer that also reports whether the control plane saw
// another worker contend for the cluster recently (an acquire denied or queued there). A
// LeaseGuard keeps leases idle for reuse only with such a client, and only while it says no.
// A control plane that does not say counts as contended.
type ContentionAcquirer interface {
	AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef) (lease Lease, contended bool, err error)
}

// reusable reports whether a lease of cluster granted at grantedAt, fenced at fenceAt, may be
// kept idle or taken from idle at now (under g.mu): the fence at least one renewal interval
// away, so the keeper has a whole round to renew it for the query that takes it.
func (g *LeaseGuard) reusable(cluster string, grantedAt, fenceAt, now time.Time) bool {
	return g.reuse && !g.stopped && g.uncontended[cluster] &&
		now.Before(grantedAt.Add(leaseReuseWindow)) && now.Add(g.o.RenewEvery).Before(fenceAt)
}

// keepIdle adds an idle lease (under g.mu) and reports whether the idle reaper must be told.
// It need not be while it sleeps until an earlier hold's end: by then this lease is at most
// idleLeaseHold past its own, and an acquire never takes a lease past its hold anyway. Telling
// it only then saves a wake-up per query on a busy slot.
func (g *LeaseGuard) keepIdle(il idleLease) bool {
	c := il.lease.Cluster
	g.idle[c] = append(g.idle[c], il)
	g.idleN++
	return g.reaperAt.IsZero()
}

// takeIdle turns the idle lease of cluster that affinity released last (else the most recently
// idled one) into a slot, if one is still reusable and this node's running slots leave room
// under limit (a lowered cap). Idle leases of the cluster that are no longer reusable go to
// the release queue.
func (g *LeaseGuard) takeIdle(cluster string, limit int, affinity uint64) *leaseSlot {
	if !g.reuse {
		return nil
	}
	now := g.o.Env.Now()
	g.mu.Lock()
	list := g.idle[cluster]
	if len(list) == 0 || g.held[cluster]+g.fallback.Running(cluster) >= limit {
		g.mu.Unlock()
		return nil
	}
	preferLast(list, affinity)
	var s *leaseSlot
	expired := false
	for len(list) > 0 && s == nil {
		il := list[len(list)-1]
		list = list[:len(list)-1]
		g.idleN--
		if !now.Before(il.until) || !g.reusable(cluster, il.grantedAt, il.fenceAt, now) {
			g.queueRelease(il.lease, il.fenceAt)
			expired = true
			continue
		}
		g.nextID++
		s = &leaseSlot{g: g, id: g.nextID, lease: il.lease, fenceAt: il.fenceAt, renewAt: il.renewAt, grantedAt: il.grantedAt, affinity: affinity}
		g.slots[s.id] = s
		g.held[cluster]++
	}
	g.idle[cluster] = list // kept even when empty: the next release appends without allocating
	g.mu.Unlock()
	if expired {
		g.released.Notify()
	}
	return s
}

// preferLast moves the last idle lease affinity released to the end of list, keeping the
// others' order.
func preferLast(list []idleLease, affinity uint64) {
	if affinity == 0 {
		return
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].affinity == affinity {
			il := list[i]
			copy(list[i:], list[i+1:])
			list[len(list)-1] = il
			return
		}
	}
}

// setIdle stores cluster's idle list (under g.mu).
func (g *LeaseGuard) setIdle(cluster string, list []idleLease) {
	if len(list) == 0 {
		delete(g.idle, cluster)
		return
	}
	g.idle[cluster] = list
}

// contention records what the control plane said about cluster. Once it says contended, the
// cluster's idle leases are released at once and none are kept until an answer says otherwise.
func (g *LeaseGuard) contention(cluster string, contended bool) {
	g.mu.Lock()
	if !contended {
		g.uncontended[cluster] = true
		g.mu.Unlock()
		return
	}
	delete(g.uncontended, cluster)
	n := g.releaseIdle(cluster)
	g.mu.Unlock()
	if n > 0 {
		g.released.Notify()
	}
}

// releaseIdle queues the releases of all idle leases of cluster and reports how many (under g.mu).
func (g *LeaseGuard) releaseIdle(cluster string) int {
	list := g.idle[cluster]
	for _, il := range list {
		g.queueRelease(il.lease, il.fenceAt)
	}
	g.idleN -= len(list)
	delete(g.idle, cluster)
	return len(list)
}

// runIdleReaper releases idle leases whose hold ran out, and all of them when ctx ends.
func (g *LeaseGuard) runIdleReaper(ctx context.Context) {
	for ctx.Err() == nil {
		seen := g.idled.Seq()
		next := g.expireIdle(g.o.Env.Now())
		var err error
		if next.IsZero() {
			err = g.idled.Wait(ctx, seen)
		} else {
			err = g.o.Env.Sleep(ctx, max(next.Sub(g.o.Env.Now()), time.Microsecond))
		}
		if err != nil {
			break
		}
	}
	g.stop(ctx)
}

// expireIdle queues the releases of idle leases whose hold has run out at now and returns when
// the next one runs out (zero when none is left): the idle reaper's next wake-up.
func (g *LeaseGuard) expireIdle(now time.Time) time.Time {
	g.mu.Lock()
	var next time.Time
	expired := false
	for _, c := range slices.Sorted(maps.Keys(g.idle)) {
		var keep []idleLease
		for _, il := range g.idle[c] {
			if now.Before(il.until) {
				keep = append(keep, il)
				if next.IsZero() || il.until.Before(next) {
					next = il.until
				}
				continue
			}
			g.queueRelease(il.lease, il.fenceAt)
			g.idleN--
			expired = true
		}
		g.setIdle(c, keep)
	}
	g.reaperAt = next
	g.mu.Unlock()
	if expired {
		g.released.Notify()
	}
	return next
}

// stop keeps nothing idle from now on, releases the idle leases and flushes the queued releases
// once more, past the end of ctx (the flusher has stopped), bounded by AcquireTimeout.
func (g *LeaseGuard) stop(ctx context.Context) {
	g.mu.Lock()
	g.stopped = true
	for _, c := range slices.Sorted(maps.Keys(g.idle)) {
		g.releaseIdle(c)
	}
	pending := len(g.queue)
	g.mu.Unlock()
	if pending == 0 {
		return
	}
	fctx, cancel := g.o.Env.WithTimeout(context.WithoutCancel(ctx), g.o.AcquireTimeout)
	defer cancel()
	for g.Flush(fctx) {
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

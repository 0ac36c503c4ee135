package capacity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
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
	releaseLinger = 2 * time.Millisecond
	// ReleaseQueueMaxDefault bounds the releases waiting for the control plane (GuardOptions).
	ReleaseQueueMaxDefault = 100000
	keeperActionsMax       = 10000 // renewals per keeper round

	// leaseReuseWindow is how long after the control plane last said that no other worker
	// contends for a cluster (an acquire's or a renewal's answer, counted from when its request
	// was sent) this node may hand a lease of it from one finished query to the next without
	// asking again (idle reuse); and, while a contention watch of it is in flight, how long
	// after the watch's wait its answer may come back (watch.go). Against a control plane
	// without the watch: while a worker reuses a cluster's leases its keeper asks again,
	// with a renewal of one of them, checkAfter from the last answer, off the queries' path: one
	// round trip per cluster every 10 ms, instead of a new lease per slot now and then, each
	// with a new engine tag to set. So when another worker is denied the cluster at t, this one
	// knows by t + checkAfter + one round trip, keeps nothing idle from then on, and its slots
	// go back as their queries end; the waiting worker, asking at least every RetryAskEvery
	// (50 ms), is then granted ahead of it (fair share). The window is the check's round trip's
	// allowance: on a loaded machine (load 15 on 2 cores) a check answered 10 ms late was common,
	// and an answer later than the window ends the reuse, every busy slot then asking for a new
	// lease (and retagging its engine connection). Only a control plane that stops answering
	// lets a worker reuse for the whole window after a waiting worker was denied.
	leaseReuseWindow = 50 * time.Millisecond
	checkAfter       = 10 * time.Millisecond
	// idleLeaseHold is how long a released lease waits idle for the next acquire of its cluster
	// before it is released the normal way (an acquire past the reuse window releases it
	// instead of taking it). Long enough for a client's next statement on a loaded machine (a
	// 2 ms hold let a lease go between the statements of a pgbench client at load 15); an idle
	// lease costs nobody anything while the cluster is uncontended, and a contended answer
	// releases it at once.
	idleLeaseHold = 10 * time.Millisecond
	// watchedIdleHold is idleLeaseHold while a contention watch of the cluster is in flight: a
	// worker denied it is heard of at once then, so holding a lease idle longer costs nobody
	// more, and it spares a client whose statements come further apart (a loaded machine, a
	// moderate rate) a new lease per statement: an acquire and a release round trip to the
	// control plane, and a retag of its engine connection.
	watchedIdleHold = 100 * time.Millisecond
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
	// ReleaseQueueMax bounds the releases waiting for the control plane (default
	// ReleaseQueueMaxDefault). Past it a release is dropped: its lease is held there until its
	// term, counted in queryflux_capacity_releases_dropped_total{reason="queue-full"} and logged.
	ReleaseQueueMax int
	Metrics         *Metrics
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
	if o.ReleaseQueueMax == 0 {
		o.ReleaseQueueMax = ReleaseQueueMaxDefault
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
	case o.ReleaseQueueMax < 0:
		return fmt.Errorf("%w: release queue bound %d must be positive", ErrInvalid, o.ReleaseQueueMax)
	}
	if err := CheckTTL(o.LeaseTTL); err != nil {
		return err
	}
	return checkName("holder", o.Holder)
}

// LeaseGuard is the store-backed Guard: every slot is a lease from its LeaseClient, renewed by
// a keeper duty and fenced locally (lost) once it could not be renewed for LeaseTTL minus
// DriftMargin, i.e. before the control plane may reclaim it. Releases are queued and sent in
// batches by a flusher duty. Run the duties (Duties) in the node's env.Loop, or with Start.
//
// It is a thin driver of a leaseTable (leasetable.go), which holds every lease and makes every
// decision: the guard feeds it events with the time they happen (an acquire's answer, a query's
// release, a renewal's outcome, a keeper round), does what the table answers (round trips
// through the LeaseClient, wake-ups, callbacks, metrics) and feeds the outcomes back.
//
// Idle reuse: when the client is a ContentionAcquirer and acquires do not wait at the control
// plane (AcquireWaits false), a released lease may be kept idle for its cluster for up to
// idleLeaseHold, and the next Acquire of that cluster takes it without a round trip. Only while
// the lease is at least RenewEvery from its fence time, and the control plane's last answer
// for the cluster, asked less than leaseReuseWindow ago, said no other worker was denied or
// queued there. When the client is also a ContentionWatcher, a watcher duty holds a contention
// watch of the clusters whose leases are being reused open at the control plane, which answers
// at once when another worker contends, so a busy worker keeps its leases, and their engine
// tags, for as long as nobody else wants the cluster. With a ContentionRenewer only (a control
// plane without the watch), the keeper asks again, with a renewal, every checkAfter instead. An
// idle-reaper duty releases idle leases not taken in time, and all of them when the duties stop.
type LeaseGuard struct {
	o       GuardOptions
	keeper  *env.Duty // renewals and self-fencing
	flusher *env.Duty // woken when a release was queued
	reaper  *env.Duty // woken when a lease went idle while the idle reaper had no deadline
	watcher *env.Duty // nil unless the client is a ContentionWatcher and leases are reused
	carries bool      // the client is a ReleasingAcquirer: acquires carry queued releases

	mu      sync.Mutex // held only around table steps, never across an Env call
	t       *leaseTable
	freed   []func() // run after every release batch (landed or failed): wake waiters
	rewatch func()   // cancels the watch in flight (nil: none)
	// lost are the named acquires whose answer was lost, oldest first: the flusher settles them
	// (frees what the control plane granted them). Nil unless the client is a NamedAcquirer.
	lost  []lostAcquire
	names NamedAcquirer

	lastReused atomic.Pointer[clusterCounter] // reusedCounter's last answer
}

// leaseSlot is a Slot of a LeaseGuard: its state lives in the guard's table.
type leaseSlot struct {
	g  *LeaseGuard
	st *slotState
	// reusedOn is the cluster of a slot taken from idle ("" otherwise): counted (LeaseReused)
	// when released, unless Unused.
	reusedOn string
	state    slotState // st's memory, for a slot taken from idle
}

// fallbackSlot is a slot granted without a lease under onUnavailable: localLimits.
type fallbackSlot struct {
	g        *LeaseGuard
	cluster  string
	released invariants.Once
}

var _ Guard = (*LeaseGuard)(nil)

// NewLeaseGuard returns a guard; call Start to run its keeper and release flusher.
func NewLeaseGuard(o GuardOptions) (*LeaseGuard, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	_, reports := o.Client.(ContentionAcquirer)
	_, renewReports := o.Client.(ContentionRenewer)
	_, carries := o.Client.(ReleasingAcquirer)
	_, watches := o.Client.(ContentionWatcher)
	// Ordered mode promises arrival order at the control plane: an idle lease taken here would
	// jump acquires already queued there until the next grant said so, so no reuse.
	reuse := reports && !o.AcquireWaits
	g := &LeaseGuard{
		o:       o,
		carries: carries,
		t: newLeaseTable(tableConfig{
			LeaseTTL: o.LeaseTTL, DriftMargin: o.DriftMargin, RenewEvery: o.RenewEvery,
			OnLeaseLost: o.OnLeaseLost, OnUnavailable: o.OnUnavailable, ReleaseQueueMax: o.ReleaseQueueMax,
			Reuse:        reuse,
			Checks:       reuse && renewReports,
			Watch:        watches,
			AcquireWaits: o.AcquireWaits,
		}),
	}
	g.names, _ = o.Client.(NamedAcquirer)
	g.keeper = &env.Duty{Name: "capacity-keeper", Blocks: true, Run: g.keep, Quick: g.keepIdle}
	g.flusher = &env.Duty{Name: "capacity-release-flusher", Blocks: true, WhenWoken: true, Run: g.flush}
	g.reaper = &env.Duty{Name: "capacity-idle-reaper", Run: g.reapIdle, Stop: g.stop}
	if reuse && watches {
		g.watcher = &env.Duty{Name: "capacity-contention-watch", Blocks: true, WhenWoken: true, Run: g.watch}
	}
	return g, nil
}

// Duties are the guard's jobs, for one env.Loop: the keeper (renewals, self-fencing), the
// release flusher, the idle reaper and, with a ContentionWatcher, the contention watcher. When
// the loop's context ends the idle reaper releases the idle leases and flushes queued releases
// once more (bounded by AcquireTimeout), so that a stopped node leaves nothing to the sweep.
func (g *LeaseGuard) Duties() []*env.Duty {
	if g.watcher == nil {
		return []*env.Duty{g.keeper, g.flusher, g.reaper}
	}
	return []*env.Duty{g.keeper, g.flusher, g.reaper, g.watcher}
}

// Start runs the guard's duties in a loop task of their own until ctx ends.
func (g *LeaseGuard) Start(ctx context.Context) {
	env.StartLoop(ctx, g.o.Env, "capacity-duties", g.Duties()...)
}

// apply does what a table step answered, outside the lock.
func (g *LeaseGuard) apply(e effects) {
	m := g.o.Metrics
	for _, l := range e.lost {
		if l.policy == OnLeaseLostOverrun {
			m.Overrun.WithLabelValues(l.cluster).Inc()
		}
		m.LeasesLost.WithLabelValues(l.cluster, l.policy).Inc()
	}
	for _, d := range e.dropped {
		m.ReleasesDropped.WithLabelValues(d.cluster, d.reason).Inc()
	}
	if f := e.queueFull; f != nil {
		// The control plane has not taken a release for a long time: an operator must see that
		// leases are held to their term.
		g.o.Env.Logger().Warn("capacity: release queue full: leases are held on the control plane until their term",
			"cluster", f.cluster, "queued", f.queued)
	}
	if e.wakeKeeper {
		g.keeper.Wake()
	}
	if e.wakeReaper {
		g.reaper.Wake()
	}
	if e.wakeFreed {
		g.wakeFreed()
	}
	if e.wakeFlusher {
		g.flusher.Wake()
	}
	if e.watch {
		g.mu.Lock()
		rewatch := g.rewatch
		g.mu.Unlock()
		if rewatch != nil {
			rewatch()
		}
		g.watcher.Wake()
	}
	for _, fn := range e.cancel {
		fn()
	}
}

// step runs one table step that answers effects, and does what it answered.
func (g *LeaseGuard) step(fn func(t *leaseTable) effects) { g.apply(g.locked(fn)) }

// locked runs fn on the table under the lock (released even when fn panics on a violated
// invariant or a double release).
func (g *LeaseGuard) locked(fn func(t *leaseTable) effects) effects {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fn(g.t)
}

// Acquire implements Guard: an idle lease of the cluster if there is one (no round trip), or
// one round trip to the LeaseClient, bounded by AcquireTimeout. When the client is a
// ReleasingAcquirer, the queued releases ride on that round trip.
func (g *LeaseGuard) Acquire(ctx context.Context, cluster string, limit int) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	affinity := query.Affinity(ctx)
	if s := g.TakeIdle(affinity, cluster, limit, nil, g.o.Env.Now()); s != nil {
		return s, nil
	}
	// Carried releases still count: the control plane decides a retry-mode acquire before it
	// frees them, so a worker never wins back its own slot ahead of others.
	carry := g.takeCarry()
	g.mu.Lock()
	reserved := g.t.reserve(cluster, limit)
	g.mu.Unlock()
	if !reserved {
		// This node alone fills the cap (or will until its releases land, when OnFreed's
		// callbacks run): no need to ask.
		g.putBack(carry)
		g.o.Metrics.LeaseDenied.WithLabelValues(cluster).Inc()
		return nil, ErrAtCapacity
	}
	sent := g.o.Env.Now()
	g.mu.Lock()
	unreachable := g.t.unreachable(sent)
	g.mu.Unlock()
	if unreachable {
		g.putBack(carry)
		g.denied(cluster)
		return g.unavailable(cluster, limit, errors.New("the control plane did not answer the last acquire"))
	}
	actx, cancel := g.o.Env.WithTimeout(ctx, g.o.AcquireTimeout)
	name := g.newName()
	lease, err := g.request(actx, cluster, limit, sent, carry, name)
	for tries := 0; tries < lostRetries && name.Request != "" && answerLost(err) && actx.Err() == nil; tries++ {
		// The control plane may have granted it: ask again under the same name, to be
		// answered that lease (renewed from now) instead of taking another slot.
		name.Retry = true
		sent = g.o.Env.Now()
		lease, err = g.ask(actx, cluster, limit, sent, nil, name)
	}
	cancel()
	if name.Request != "" && (answerLost(err) || (name.Retry && errors.Is(err, ErrAtCapacity))) {
		// A retry denied may have come while its first sending was being decided, and found
		// the cluster full with that sending's grant: settle the name all the same.
		g.lose(cluster, name.Request, sent)
	}
	if err == nil {
		now := g.o.Env.Now()
		g.mu.Lock()
		why := g.t.suspectGrant(cluster, lease)
		if why == "" && lease.Holder != "" && HolderWorker(lease.Holder) != HolderWorker(g.o.Holder) {
			why = answerHolder
		}
		var st *slotState
		var late bool
		var e effects
		if why == "" {
			st, late, e = g.t.granted(cluster, lease, sent, affinity, now)
		} else {
			e = g.t.refuseGrant(cluster, lease, sent, why)
		}
		g.mu.Unlock()
		g.apply(e)
		if why != "" {
			g.misbehaved(cluster, lease.ID, why, "acquire")
			g.o.Metrics.LeaseDenied.WithLabelValues(cluster).Inc()
			return nil, ErrAtCapacity
		}
		if late {
			return nil, ErrAtCapacity
		}
		return &leaseSlot{g: g, st: st}, nil
	}
	g.denied(cluster)
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
	now := g.o.Env.Now()
	g.mu.Lock()
	g.t.failed(now)
	g.mu.Unlock()
	return g.unavailable(cluster, limit, err)
}

// answerHolder is a grant of a lease the answer itself says another node holds: a control
// plane that hands one lease to two workers. Using it would run a query on another worker's
// slot, past the cap; and that lease is not this node's to renew or give back (the control
// plane refuses both to any session but its holder's), so it is left alone.
const answerHolder = "holder"

// misbehaved reports an answer of the control plane's that this node did not use (why: the
// answer kinds of suspectGrant and suspectRenewal): counted, and logged, for an operator.
func (g *LeaseGuard) misbehaved(cluster, lease, why, op string) {
	g.o.Metrics.MisbehavingAnswers.WithLabelValues(cluster, why).Inc()
	g.o.Env.Logger().Warn("capacity: the control plane answered a lease this node cannot count on; not used",
		"op", op, "cluster", cluster, "lease", lease, "kind", why)
}

// denied ends a reserved acquire that brought no lease.
func (g *LeaseGuard) denied(cluster string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t.denied(cluster)
}

// request sends one acquire (carrying carry) and settles the carried releases: landed after a
// grant or denial, put back for the flusher otherwise.
func (g *LeaseGuard) request(ctx context.Context, cluster string, limit int, sent time.Time, carry []queuedRelease, name Naming) (Lease, error) {
	lease, err := g.ask(ctx, cluster, limit, sent, refsOf(carry), name)
	if len(carry) == 0 {
		return lease, err
	}
	if err == nil || errors.Is(err, ErrAtCapacity) {
		g.step(func(t *leaseTable) effects { return t.landed(carry) })
	} else {
		g.putBack(carry)
	}
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotHolder) {
		// A control plane older than the release field refuses it, or one of them is a lease
		// of a session this node no longer is (it registered again): ask plainly, and the
		// flusher sends the releases on their own.
		lease, err = g.ask(ctx, cluster, limit, sent, nil, name)
	}
	return lease, err
}

// ask is one acquire round trip, releases riding on it when there are any. A ContentionAcquirer
// also says whether other workers contend for the cluster, which decides idle reuse.
func (g *LeaseGuard) ask(ctx context.Context, cluster string, limit int, sent time.Time, release []LeaseRef, name Naming) (Lease, error) {
	if g.names != nil {
		lease, contended, err := g.names.AcquireContendedNamed(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent, release, name)
		if err == nil || errors.Is(err, ErrAtCapacity) {
			g.step(func(t *leaseTable) effects { return t.contention(cluster, contended, sent) })
		}
		return lease, err
	}
	if ca, ok := g.o.Client.(ContentionAcquirer); ok {
		lease, contended, err := ca.AcquireContended(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent, release)
		if err == nil || errors.Is(err, ErrAtCapacity) {
			g.step(func(t *leaseTable) effects { return t.contention(cluster, contended, sent) })
		}
		return lease, err
	}
	if len(release) > 0 {
		return g.o.Client.(ReleasingAcquirer).AcquireReleasing(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent, release)
	}
	return g.o.Client.Acquire(ctx, cluster, g.o.Holder, limit, g.o.LeaseTTL, sent)
}

// lostRetries bounds how often one acquire is asked again under its name after its answer was
// lost, while its time lasts.
const lostRetries = 2

// lostMax bounds the named acquires kept for the flusher to settle (the oldest go first: their
// leases, if any, expire at the control plane on their own).
const lostMax = 1024

// lostAcquire is a named acquire whose answer was lost: the control plane may hold a lease for
// it, which nobody here knows of.
type lostAcquire struct {
	cluster, request string
	sent             time.Time // its last sending
}

// answerLost reports whether an acquire's outcome leaves unknown whether the control plane
// granted it: no answer (a timeout, a cut connection, the caller gone) or a failure answer (the
// store may have committed the grant). A grant, a denial and a refusal are answers.
func answerLost(err error) bool {
	return err != nil && !errors.Is(err, ErrAtCapacity) && !errors.Is(err, ErrInvalid) &&
		!errors.Is(err, ErrNotHolder) && !errors.Is(err, ErrStaleGeneration)
}

// newName names an acquire, from the node's random source ("" without a NamedAcquirer).
func (g *LeaseGuard) newName() Naming {
	if g.names == nil {
		return Naming{}
	}
	return Naming{Request: strconv.FormatUint(g.o.Env.Rand().Uint64(), 36)}
}

// lose keeps a named acquire whose answer was lost for the flusher to settle.
func (g *LeaseGuard) lose(cluster, request string, sent time.Time) {
	g.mu.Lock()
	if len(g.lost) >= lostMax {
		g.lost = g.lost[1:]
	}
	g.lost = append(g.lost, lostAcquire{cluster: cluster, request: request, sent: sent})
	g.mu.Unlock()
	g.flusher.Wake()
}

// LostAcquires is how many named acquires whose answer was lost wait to be settled.
func (g *LeaseGuard) LostAcquires() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.lost)
}

// settleLost asks the control plane to free what it granted the lost acquires, and reports
// whether all of them are settled. One whose lease would have expired by now (a lease term
// since its last sending) is dropped: the control plane reclaims that lease on its own.
func (g *LeaseGuard) settleLost(ctx context.Context) bool {
	g.mu.Lock()
	lost := g.lost
	g.lost = nil
	g.mu.Unlock()
	var left []lostAcquire
	for i, l := range lost {
		if g.o.Env.Now().Sub(l.sent) >= g.o.LeaseTTL {
			continue
		}
		sctx, cancel := g.o.Env.WithTimeout(ctx, g.o.AcquireTimeout)
		err := g.names.Settle(sctx, l.cluster, g.o.Holder, l.request)
		cancel()
		if answerLost(err) && !errors.Is(err, ErrNamesUnsupported) {
			g.o.Metrics.CoordinationFailures.WithLabelValues("settle").Inc()
			left = append(left, lost[i:]...)
			break
		}
	}
	if len(left) == 0 {
		return true
	}
	g.mu.Lock()
	g.lost = append(left, g.lost...)
	if len(g.lost) > lostMax {
		g.lost = g.lost[len(g.lost)-lostMax:]
	}
	g.mu.Unlock()
	return false
}

// unavailable applies the onUnavailable policy to an acquire the control plane cannot answer.
func (g *LeaseGuard) unavailable(cluster string, limit int, err error) (Slot, error) {
	g.mu.Lock()
	answer := g.t.unavailable(cluster, limit)
	g.mu.Unlock()
	switch answer {
	case admitLocal:
		return &fallbackSlot{g: g, cluster: cluster}, nil
	case localFull:
		g.o.Metrics.LeaseDenied.WithLabelValues(cluster).Inc()
		return nil, ErrAtCapacity
	}
	return nil, fmt.Errorf("%w: acquire on %s: %v", ErrUnavailable, cluster, err)
}

// TakeIdle implements IdleTaker: an idle lease of cluster as a slot (the one last used by
// affinity when it is idle), or nil, without a round trip. The slot is spare's
// memory when spare is a released slot of g's (an event loop's client hands back its last one).
// now is the caller's reading of g's clock (IdleTaker).
func (g *LeaseGuard) TakeIdle(affinity uint64, cluster string, limit int, spare Slot, now time.Time) Slot {
	if !g.t.c.Reuse {
		return nil
	}
	ls, _ := spare.(*leaseSlot)
	g.mu.Lock()
	if ls == nil || ls.g != g || !ls.st.released { // the table forgets a slot at its release
		ls = new(leaseSlot) // its state in the same allocation
	}
	st, e := g.t.takeIdle(cluster, limit, affinity, now, &ls.state)
	if st != nil {
		ls.g, ls.st, ls.reusedOn = g, st, cluster // every field but state, which st is
	}
	g.mu.Unlock()
	g.apply(e)
	if st == nil {
		return nil
	}
	return ls
}

// takeCarry takes the queued releases (one batch at most) for an acquire to carry, when the
// client can.
func (g *LeaseGuard) takeCarry() []queuedRelease {
	if !g.carries {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.t.takeBatch()
}

// putBack returns carried releases to the front of the queue for the flusher.
func (g *LeaseGuard) putBack(carry []queuedRelease) {
	if len(carry) > 0 {
		g.step(func(t *leaseTable) effects { return t.putBack(carry) })
	}
}

func refsOf(batch []queuedRelease) []LeaseRef {
	refs := make([]LeaseRef, len(batch))
	for i, q := range batch {
		refs[i] = q.ref
	}
	return refs
}

// Held is the number of leased slots this node holds on cluster (fenced ones until released,
// idle ones included: the control plane counts them).
func (g *LeaseGuard) Held(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.t.heldOf(cluster) + len(g.t.idleOf(cluster))
}

// Idle is the number of idle leases this node keeps for cluster.
func (g *LeaseGuard) Idle(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.t.idleOf(cluster))
}

// RetryMax is how soon a denied acquire must be asked again (the proxy core's RetryCapper): in
// retry mode the control plane keeps a freed slot for a waiting worker only while it asks at
// least every RetryAskEvery; acquires that wait at the control plane (ordered) set no bound.
func (g *LeaseGuard) RetryMax() time.Duration {
	if g.o.AcquireWaits {
		return 0
	}
	return RetryAskEvery
}

// OnFreed registers fn to run after every release batch, whether it landed or failed: a caller
// that was denied (ErrAtCapacity) may find a slot now. fn runs in the task that settled the
// batch (a flusher run, an acquire that carried it, the duty loop) and must not block
// (env.Signal.Notify). The proxy core registers its wake-up here.
func (g *LeaseGuard) OnFreed(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freed = append(g.freed, fn)
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

// Local is the number of fallback (unleased) slots this node holds on cluster.
func (g *LeaseGuard) Local(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.t.local[cluster]
}

// PendingReleases is the number of releases queued and not yet sent.
func (g *LeaseGuard) PendingReleases() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.t.queue)
}

// Release implements Slot. The lease is kept idle for the next acquire of its cluster when
// idle reuse allows (then OnFreed's callbacks run at once: a waiter may take it), or queued for
// release. A slot taken from idle is counted as reused here, once its query is over: a slot
// handed back unused (Unused) and taken again would otherwise count twice for one query.
func (s *leaseSlot) Release() {
	if s.reusedOn != "" {
		s.g.reusedCounter(s.reusedOn).Inc()
	}
	now := s.g.o.Env.Now()
	s.g.step(func(t *leaseTable) effects { return t.release(s.st, now) })
}

// reusedCounter is cluster's LeaseReused counter. The last one looked up is kept: a label
// lookup hashes the cluster's name and takes the vector's lock, once per leased statement
// otherwise, and a worker's statements mostly run on the cluster its last one ran on.
func (g *LeaseGuard) reusedCounter(cluster string) prometheus.Counter {
	if last := g.lastReused.Load(); last != nil && last.cluster == cluster {
		return last.counter
	}
	c := g.o.Metrics.LeaseReused.WithLabelValues(cluster)
	g.lastReused.Store(&clusterCounter{cluster: cluster, counter: c})
	return c
}

// clusterCounter is a counter of one cluster's label.
type clusterCounter struct {
	cluster string
	counter prometheus.Counter
}

// Unused marks slot as one that served nothing (its caller gives it back to ask again where it
// may wait, as an event loop does when the engine connection is not ready): a lease guard's
// slot taken from idle is then not counted as reused when released. Call it before Release.
func Unused(slot Slot) {
	if s, ok := slot.(*leaseSlot); ok {
		s.reusedOn = ""
	}
}

// settled: released before it was lost. A fence takes a slot's OnLost functions (to run them)
// only while the slot is live and marks it lost then; a release drops them. (Settled)
func (s *leaseSlot) settled() bool {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.st.released && !s.st.lost
}

// Lost implements Slot.
func (s *leaseSlot) Lost() bool {
	now := s.g.o.Env.Now()
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.g.t.lostAt(s.st, now)
}

// OnLost implements Slot.
func (s *leaseSlot) OnLost(fn func()) {
	s.g.mu.Lock()
	now := s.g.t.onLost(s.st, fn)
	s.g.mu.Unlock()
	if now {
		fn()
	}
}

// Lease is the slot's lease as last granted or renewed.
func (s *leaseSlot) Lease() Lease {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.st.hl.lease
}

// Release implements Slot.
func (s *fallbackSlot) Release() {
	if !s.released.Close("capacity slot on", s.cluster) {
		return
	}
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.t.releaseLocal(s.cluster)
}

func (s *fallbackSlot) Lost() bool    { return false }
func (s *fallbackSlot) OnLost(func()) {}

// ------------------------------------------------------------------------------------ keeper

// keep is the keeper duty: Keep, and again when it next has work (within RenewEvery, and at
// least a millisecond later).
func (g *LeaseGuard) keep(ctx context.Context, _ time.Time) time.Time {
	return g.keeperNext(g.Keep(ctx))
}

// keepIdle is the keeper duty's run when no renewal is due (most of its runs: it fences and
// reckons when it next has work, no round trip), done in the loop's task; false when one is due.
func (g *LeaseGuard) keepIdle(ctx context.Context, _ time.Time) (time.Time, bool) {
	g.mu.Lock()
	idle := ctx.Err() != nil || len(g.t.dueRenewals(g.o.Env.Now())) == 0
	g.mu.Unlock()
	if !idle {
		return time.Time{}, false
	}
	return g.keeperNext(g.fenceDue()), true
}

func (g *LeaseGuard) keeperNext(next time.Time) time.Time {
	now := g.o.Env.Now()
	wait := min(next.Sub(now), g.o.RenewEvery)
	return now.Add(max(wait, time.Millisecond))
}

// Keep does the keeper's work that is due now: fence leases past their fence time, renew
// leases whose renewal is due (the table's batch, most overdue first, in round trips of up to
// RenewBatchMax, fencing again before each). It returns when it next has work. The keeper duty
// calls it; tests may too.
func (g *LeaseGuard) Keep(ctx context.Context) time.Time {
	for actions := 0; actions < keeperActionsMax && ctx.Err() == nil; {
		g.mu.Lock()
		due := g.t.dueRenewals(g.o.Env.Now())
		g.mu.Unlock()
		sent := 0
		for len(due) > 0 && actions < keeperActionsMax && ctx.Err() == nil {
			n := min(len(due), RenewBatchMax, keeperActionsMax-actions)
			k := g.renew(ctx, due[:n])
			due = due[n:]
			sent, actions = sent+k, actions+k
		}
		if sent == 0 {
			break
		}
	}
	return g.fenceDue()
}

// fenceDue fences the leases past their fence time and returns when the keeper next has work.
func (g *LeaseGuard) fenceDue() time.Time {
	now := g.o.Env.Now()
	g.step(func(t *leaseTable) effects { return t.fence(now) })
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.t.nextWork(g.o.Env.Now())
}

// renew fences what is due, then renews those of slots that still need it in one round trip
// (its answer also says which of their clusters are contended, with a ContentionRenewer), and
// reports how many renewals it sent.
func (g *LeaseGuard) renew(ctx context.Context, slots []*slotState) int {
	sent := g.o.Env.Now()
	g.mu.Lock()
	e := g.t.fence(sent)
	live, refs, fenceFirst := g.t.beginRenewals(slots, sent)
	g.mu.Unlock()
	g.apply(e)
	if len(live) == 0 {
		return 0
	}
	timeout := min(g.o.AcquireTimeout, fenceFirst.Sub(sent))
	rctx, cancel := g.o.Env.WithTimeout(ctx, max(timeout, time.Millisecond))
	results, contended, err := renewContended(rctx, g.o.Client, refs, g.o.LeaseTTL, sent)
	cancel()
	now := g.o.Env.Now()
	var suspect []suspectAnswer
	g.mu.Lock()
	for i, s := range live {
		l, rerr := Lease{}, err
		if err == nil {
			l, rerr = results[i].Lease, results[i].Err
		}
		why := ""
		if rerr == nil {
			why = suspectRenewal(s.hl.lease, l)
		}
		switch {
		case why != "":
			// Not a renewal this node can count on: fenced at once, as a refused one.
			suspect = append(suspect, suspectAnswer{s.hl.lease.Cluster, s.hl.lease.ID, why})
			g.t.renewRefused(s, sent)
		case rerr == nil:
			g.t.renewed(s, sent, l)
		case errors.Is(rerr, ErrStaleGeneration), errors.Is(rerr, ErrNotHolder):
			// The control plane no longer has it, or not for this node's current session (it
			// registered again; the old session's leases are being fenced): fence at once.
			g.t.renewRefused(s, sent)
		default:
			g.o.Metrics.CoordinationFailures.WithLabelValues("renew").Inc()
			g.t.renewFailed(s, now)
		}
	}
	var answered effects
	if err == nil {
		answered = g.t.renewedContention(contended, sent)
	}
	g.mu.Unlock()
	for _, a := range suspect {
		g.misbehaved(a.cluster, a.lease, a.why, "renew")
	}
	g.apply(answered)
	return len(live)
}

// suspectAnswer is one renewal answer not used (suspectRenewal).
type suspectAnswer struct{ cluster, lease, why string }

// renewContended renews refs through c (RenewAll) and, when c is a ContentionRenewer, answers
// what the control plane said about their clusters' contention.
func renewContended(ctx context.Context, c LeaseClient, refs []LeaseRef, ttl time.Duration, now time.Time) ([]Renewed, map[string]bool, error) {
	if cr, ok := c.(ContentionRenewer); ok {
		return cr.RenewBatchContended(ctx, refs, ttl, now)
	}
	results, err := RenewAll(ctx, c, refs, ttl, now)
	return results, nil, err
}

// ----------------------------------------------------------------------------------- watch

// watch is the contention watcher duty, woken when a lease of a cluster its watch does not
// cover is reused: while this node holds leases of uncontended clusters, it holds a watch of
// them open at the control plane, one after the other. After a failed watch it runs again
// watchRetry later; when the control plane has no watch, never again (the keeper checks).
func (g *LeaseGuard) watch(ctx context.Context, _ time.Time) time.Time {
	for ctx.Err() == nil {
		wctx, cancel := g.o.Env.WithCancel(ctx)
		sent := g.o.Env.Now()
		g.mu.Lock()
		clusters := g.t.beginWatch(sent)
		g.rewatch = cancel
		g.mu.Unlock()
		if len(clusters) == 0 {
			g.endWatch(cancel)
			return time.Time{}
		}
		tctx, tcancel := g.o.Env.WithTimeout(wctx, watchWait+g.o.AcquireTimeout)
		uncontended, err := g.o.Client.(ContentionWatcher).WatchContention(tctx, g.o.Holder, clusters, watchWait)
		tcancel()
		cancelled := wctx.Err() != nil && ctx.Err() == nil
		g.endWatch(cancel)
		end := watchAnswered
		switch {
		case err == nil:
		case cancelled:
			end = watchCancelled
		case errors.Is(err, ErrWatchUnsupported):
			end = watchUnsupported
			g.o.Env.Logger().Info("capacity: the control plane predates the contention watch; reused leases are checked with renewals")
		default:
			end = watchFailed
			if ctx.Err() == nil {
				g.o.Metrics.CoordinationFailures.WithLabelValues("watch").Inc()
			}
		}
		now := g.o.Env.Now()
		g.step(func(t *leaseTable) effects { return t.watched(clusters, uncontended, end, sent, now) })
		switch end {
		case watchFailed:
			return now.Add(watchRetry)
		case watchUnsupported:
			return time.Time{}
		}
	}
	return time.Time{}
}

// endWatch cancels the watch's context and forgets it.
func (g *LeaseGuard) endWatch(cancel context.CancelFunc) {
	g.mu.Lock()
	g.rewatch = nil
	g.mu.Unlock()
	cancel()
}

// ----------------------------------------------------------------------------------- flusher

// flush is the flusher duty, woken when a release is queued: it sends the queued releases in
// batches; when the control plane does not take them, it backs off about a second (wake-ups
// meanwhile wait for it) and runs again.
func (g *LeaseGuard) flush(ctx context.Context, _ time.Time) time.Time {
	for ctx.Err() == nil {
		if g.carries && g.PendingReleases() > 0 {
			// Give the next acquire a moment to carry these releases on its own round trip.
			if g.o.Env.Sleep(ctx, releaseLinger) != nil {
				return time.Time{}
			}
		}
		if !g.Flush(ctx) {
			break
		}
	}
	settled := g.names == nil || g.settleLost(ctx)
	if g.PendingReleases() == 0 && settled {
		return time.Time{}
	}
	// The control plane did not answer: back off.
	if g.o.Env.Sleep(ctx, env.Jitter(g.o.Env.Rand(), time.Second, 0.2)) != nil {
		return time.Time{}
	}
	return g.o.Env.Now()
}

// Flush sends one batch of queued releases. It reports whether it sent one successfully.
// A failed batch goes back to the queue, minus the releases whose leases have expired anyway.
func (g *LeaseGuard) Flush(ctx context.Context) bool {
	g.mu.Lock()
	batch := g.t.takeBatch()
	g.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	fctx, cancel := g.o.Env.WithTimeout(ctx, g.o.AcquireTimeout)
	_, err := g.o.Client.ReleaseBatch(fctx, refsOf(batch))
	cancel()
	if errors.Is(err, ErrNotHolder) {
		// Some of them are leases of a session this node no longer is: the control plane
		// freed the others and fences and frees those itself. Sending them again cannot help.
		g.o.Env.Logger().Warn("capacity: the control plane refused releases of leases this node's session does not hold", "err", redact.Error(err))
		err = nil
	}
	if err == nil {
		g.step(func(t *leaseTable) effects { return t.landed(batch) })
		return true
	}
	g.o.Metrics.CoordinationFailures.WithLabelValues("release").Inc()
	now := g.o.Env.Now()
	g.step(func(t *leaseTable) effects { return t.flushFailed(batch, now) })
	return false
}

// ------------------------------------------------------------------------------- idle reuse

// ContentionAcquirer is a ReleasingAcquirer that also reports whether the control plane saw
// another worker contend for the cluster recently (an acquire denied or queued there). A
// LeaseGuard keeps leases idle for reuse only with such a client, and only while it says no.
// A control plane that does not say counts as contended.
type ContentionAcquirer interface {
	AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef) (lease Lease, contended bool, err error)
}

// NamedAcquirer is a ContentionAcquirer whose acquires the worker names (AcquireRequest's
// RequestID), so that an acquire whose answer was lost (a timeout, a connection cut after the
// request went out, a client that went away meanwhile) leaves no slot held to the lease's term:
// the next acquire of the cluster asks again under the same name (Retry) and is answered the
// lease the first sending was granted, or Settle frees it.
type NamedAcquirer interface {
	AcquireContendedNamed(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef, name Naming) (lease Lease, contended bool, err error)
	// Settle frees the lease granted to holder's acquire request of cluster, if any.
	// ErrNamesUnsupported: the control plane cannot.
	Settle(ctx context.Context, cluster, holder, request string) error
}

// Naming names one acquire: its request id, and whether it was sent before.
type Naming struct {
	Request string
	Retry   bool
}

// ErrNamesUnsupported says the control plane predates named acquires.
var ErrNamesUnsupported = errors.New("capacity: the control plane does not know named acquires")

// ContentionRenewer is a BatchRenewer whose answers also say, like a ContentionAcquirer's,
// whether another worker was denied or queued recently for the renewed leases' clusters. With
// one, a LeaseGuard's keeper checks a cluster whose leases it reuses before the reuse window
// ends (a renewal of one of them), so reuse goes on without a new lease per window. contended
// holds the clusters the control plane spoke about (true: contended); one it said nothing
// about is absent, and its reuse ends with its window.
type ContentionRenewer interface {
	RenewBatchContended(ctx context.Context, refs []LeaseRef, ttl time.Duration, now time.Time) (results []Renewed, contended map[string]bool, err error)
}

// reapIdle is the idle reaper duty: it releases the idle leases whose hold ran out, and runs
// again when the next one's does (or when woken: a lease went idle). It does not wait.
func (g *LeaseGuard) reapIdle(_ context.Context, _ time.Time) time.Time {
	now := g.o.Env.Now()
	var next time.Time
	g.step(func(t *leaseTable) (e effects) { next, e = t.expireIdle(now); return e })
	return next
}

// stop, when the duties stop, keeps nothing idle from now on, releases the idle leases and
// flushes the queued releases once more, past the end of ctx (the flusher has stopped), bounded
// by AcquireTimeout.
func (g *LeaseGuard) stop(ctx context.Context) {
	e := g.locked(func(t *leaseTable) effects { return t.stop() })
	e.wakeFlusher = false // the flusher has stopped: the flush below sends what was queued
	g.apply(e)
	if g.PendingReleases() == 0 && g.LostAcquires() == 0 {
		return
	}
	fctx, cancel := g.o.Env.WithTimeout(context.WithoutCancel(ctx), g.o.AcquireTimeout)
	defer cancel()
	for g.Flush(fctx) {
	}
	if g.names != nil {
		g.settleLost(fctx)
	}
}

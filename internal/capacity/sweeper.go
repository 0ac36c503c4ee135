package capacity

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
)

// SweepLockName is the lock control-plane replicas take before sweeping stale leases.
const SweepLockName = "capacity-stale-leases"

// fenceTimeout bounds one engine fence call of one cluster.
const fenceTimeout = 10 * time.Second

// Sweeper reclaims leases. Each round it revokes the leases whose renewals stopped (expired by
// the store's clock), then, for every revoked lease (expired, of an evicted worker, or revoked
// by an operator), asks the engine fence to stop the work the lease admitted and frees the
// slot only when the fence confirms it and the lease has expired (termsOver). A lease whose fence cannot confirm is freed after
// Grace, and never before its holder has fenced itself (one lease TTL after this replica first
// tried, unless the store already found it expired): that is the bounded wait of an engine
// that cannot be asked. Several control-plane replicas may run one; the sweep lock lets one
// sweep at a time.
type Sweeper struct {
	Env     env.Env
	Store   CapacityStore
	Locks   SweepCoordinator
	Owner   string        // this replica's name
	Every   time.Duration // default 5 s
	Fence   EngineFence   // nil: no engine to ask (expired leases are freed at once)
	Grace   time.Duration // how long an unconfirmed fence holds a slot (default FenceGraceDefault with a Fence)
	Fleet   *Fleet        // the leases' fleet, for their engine tags (nil: none)
	Metrics *Metrics
	// OnFreed, if set, is told the leases each round freed (API.Freed: it wakes the ordered
	// queue's waiters). It must not block.
	OnFreed func(refs []LeaseRef)
	// Watch, if set, runs beside the sweeps for as long as Run does: the watch of the leases
	// other replicas free (API.WatchFreed).
	Watch func(ctx context.Context)
	// Limits, if set, are the clusters' caps: each round audits every cluster's leases against
	// its cap and counts a lease found granted over it (auditCaps, Metrics.OverCap).
	Limits Limits

	once    sync.Once
	wake    env.Signal
	mu      sync.Mutex
	tried   map[string]time.Time // lease ID -> when this replica first failed to fence it
	expired map[string]bool      // lease IDs the store revoked as expired
	audits  map[string]*capAudit // by cluster
}

// FenceGraceDefault is how long a revoked lease whose engine fence could not confirm keeps its
// slot: the default lease TTL, time for a live holder to notice and for an engine-side limit
// (client_connection_check_interval, a statement timeout) to act.
const FenceGraceDefault = LeaseTTLDefault

func (s *Sweeper) init() {
	s.once.Do(func() {
		s.wake = s.Env.NewSignal()
		s.tried, s.expired = map[string]time.Time{}, map[string]bool{}
		s.Metrics = metricsOrNew(s.Metrics)
		if s.Fence != nil && s.Grace == 0 {
			s.Grace = FenceGraceDefault
		}
	})
}

// Wake asks for a round now (a lease was revoked).
func (s *Sweeper) Wake() {
	s.init()
	s.wake.Notify()
}

// Run sweeps every Every, and when woken, until ctx ends. Start it with env.Go.
func (s *Sweeper) Run(ctx context.Context) {
	s.init()
	if s.Watch != nil {
		s.Env.Go(ctx, "capacity-freed-watch", s.Watch)
	}
	every := s.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	for ctx.Err() == nil {
		seen := s.wake.Seq()
		_, _ = s.SweepOnce(ctx, 2*every)
		wctx, cancel := s.Env.WithTimeout(ctx, env.Jitter(s.Env.Rand(), every, 0.1))
		_ = s.wake.Wait(wctx, seen)
		cancel()
	}
}

// SweepOnce takes the sweep lock for lockTTL and, if granted, revokes every expired lease and
// frees the revoked leases whose work is fenced (or whose grace is over). It returns the
// leases freed.
func (s *Sweeper) SweepOnce(ctx context.Context, lockTTL time.Duration) ([]Lease, error) {
	s.init()
	if _, err := s.Locks.AcquireSweepLock(ctx, SweepLockName, s.Owner, lockTTL, s.Env.Now()); err != nil {
		if !errors.Is(err, ErrLockHeld) {
			s.Env.Logger().Warn("capacity sweep lock failed", "err", redact.Error(err))
			return nil, err
		}
		s.auditOnly(ctx) // another replica sweeps: the caps this one grants under are audited here
		return nil, err
	}
	revoked, err := s.Store.Revoke(ctx, Selection{Expired: true}, s.Env.Now())
	if err != nil {
		s.Env.Logger().Warn("capacity sweep failed", "err", redact.Error(err))
		return nil, err
	}
	s.mu.Lock()
	var fresh []Lease
	for _, l := range revoked {
		if !s.expired[l.ID] {
			s.expired[l.ID] = true
			fresh = append(fresh, l)
		}
	}
	s.mu.Unlock()
	for _, l := range fresh {
		s.Env.Logger().Info("capacity lease expired: revoked, to be fenced and freed", "lease", l.ID, "holder", l.Holder, "expiredAt", l.ExpiresAt)
	}
	return s.reclaim(ctx)
}

// reclaim fences and frees the revoked leases, cluster by cluster.
func (s *Sweeper) reclaim(ctx context.Context) ([]Lease, error) {
	all, err := s.Store.List(ctx, "")
	if err != nil {
		s.Env.Logger().Warn("capacity reclaim: listing leases failed", "err", redact.Error(err))
		return nil, err
	}
	s.auditCaps(all)
	byCluster := map[string][]Lease{}
	var clusters []string
	live := map[string]bool{}
	for _, l := range all {
		if !l.Revoked {
			continue
		}
		if byCluster[l.Cluster] == nil {
			clusters = append(clusters, l.Cluster)
		}
		byCluster[l.Cluster] = append(byCluster[l.Cluster], l)
		live[l.ID] = true
	}
	s.forgetGone(live)
	var freed []Lease
	for _, c := range clusters { // List's order: sorted
		ls := byCluster[c]
		free, how := s.fence(ctx, c, ls)
		if len(free) == 0 {
			continue
		}
		n, err := s.Store.ReleaseBatch(ctx, refs(free))
		if err != nil {
			s.Env.Logger().Warn("capacity reclaim: freeing revoked leases failed", "cluster", c, "err", redact.Error(err))
			continue
		}
		s.Metrics.Reclaimed.WithLabelValues(c, how).Add(float64(n))
		for _, l := range free {
			s.Env.Logger().Info("capacity lease reclaimed", "lease", l.ID, "holder", l.Holder, "fence", how)
		}
		freed = append(freed, free...)
	}
	if s.OnFreed != nil && len(freed) > 0 {
		s.OnFreed(refs(freed))
	}
	return freed, nil
}

// fence asks the engine fence to stop ls' work and returns the leases that may be freed now,
// and how their fence ended: "fenced" (confirmed), "grace" (not confirmed, grace over) or
// "none" (no fence configured).
func (s *Sweeper) fence(ctx context.Context, cluster string, ls []Lease) ([]Lease, string) {
	if s.Fence != nil {
		fctx, cancel := s.Env.WithTimeout(ctx, fenceTimeout)
		fenced := refs(ls)
		fleet := s.Fleet.ID(fctx)
		for i := range fenced {
			fenced[i].Fleet = fleet // the store keeps no fleet per lease: every one is the store's
		}
		done, err := s.Fence.Fence(fctx, cluster, fenced)
		cancel()
		if done {
			return s.termsOver(ls), "fenced"
		}
		if err != nil {
			s.Env.Logger().Warn("capacity reclaim: the engine fence failed; the slots wait out the fence grace", "cluster", cluster, "leases", len(ls), "err", redact.Error(err))
		}
	}
	now := s.Env.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var free []Lease
	for _, l := range ls {
		first, ok := s.tried[l.ID]
		if !ok {
			first = now
			s.tried[l.ID] = now
		}
		waited := now.Sub(first)
		if waited >= s.Grace && (s.expired[l.ID] || waited >= l.TTL()) {
			free = append(free, l)
		}
	}
	if s.Fence == nil {
		return free, "none"
	}
	return free, "grace"
}

// termsOver are the leases of ls whose term is over by the store's clock. A lease revoked before
// its expiry (its holder evicted, or an operator's revocation) keeps its slot until then, fenced
// or not: a holder that is alive but was silent, or has not yet heard of the revocation, may
// start another query under it until its own term ends (its clock fences it a drift margin
// before the store's), after the fence has run. The sweep at its expiry fences it again.
func (s *Sweeper) termsOver(ls []Lease) []Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	var over []Lease
	for _, l := range ls {
		if s.expired[l.ID] {
			over = append(over, l)
		}
	}
	return over
}

// forgetGone drops the bookkeeping of leases no longer revoked in the store.
func (s *Sweeper) forgetGone(live map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(s.tried)) {
		if !live[id] {
			delete(s.tried, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.expired)) {
		if !live[id] {
			delete(s.expired, id)
		}
	}
}

func refs(ls []Lease) []LeaseRef {
	out := make([]LeaseRef, len(ls))
	for i, l := range ls {
		out[i] = l.Ref()
	}
	return out
}

package capacity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/sim"
)

// misbehavingCP is a control plane that lies on purpose, over an honest store: by its script
// (cycled), an acquire is answered honestly, granted over the cap, answered a lease it answered
// before (held by the worker or given back: granted twice), a lease it revoked, or a lease of
// another cluster; a renewal is answered honestly, as revoked, or with another lease. It counts
// the lies a worker can tell (all but the grants over the cap).
type misbehavingCP struct {
	store    *capacity.Memory
	now      func() time.Time
	acquires []int
	renewals []int
	na, nr   int
	answered []capacity.Lease // well-formed leases answered to acquires, in order
	lies     int
	overCap  int
	// badRenewals: when each lease was last answered revoked, or with another lease, to a renewal.
	badRenewals map[string]time.Time
}

func (c *misbehavingCP) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, _ time.Time) (capacity.Lease, error) {
	choice := c.acquires[c.na%len(c.acquires)]
	c.na++
	switch {
	case choice == 1:
		c.overCap++
		limit += 100
	case choice == 2 && len(c.answered) > 0:
		c.lies++
		return c.answered[c.na%len(c.answered)], nil
	case choice == 4:
		c.lies++
		return capacity.Lease{ID: capacity.LeaseID("elsewhere", 7), Cluster: "elsewhere", Holder: holder, Generation: 7,
			ExpiresAt: c.now().Add(ttl), TTLMillis: ttl.Milliseconds()}, nil
	}
	l, err := c.store.Acquire(ctx, cluster, holder, limit, ttl, c.now())
	if err != nil {
		return l, err
	}
	if choice == 3 {
		c.lies++
		revoked, _ := c.store.Revoke(ctx, capacity.Selection{Refs: []capacity.LeaseRef{l.Ref()}}, c.now())
		l = revoked[0]
	}
	c.answered = append(c.answered, l)
	return l, nil
}

func (c *misbehavingCP) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, _ time.Time) (capacity.Lease, error) {
	choice := c.renewals[c.nr%len(c.renewals)]
	c.nr++
	l, err := c.store.Renew(ctx, ref, ttl, c.now())
	switch {
	case err != nil:
		return l, err
	case choice == 1:
		c.lies++
		c.badRenewals[ref.ID] = c.now()
		revoked, _ := c.store.Revoke(ctx, capacity.Selection{Refs: []capacity.LeaseRef{ref}}, c.now())
		return revoked[0], nil // revoked, answered as renewed
	case choice == 2:
		c.lies++
		c.badRenewals[ref.ID] = c.now()
		l.Generation++
		l.ID = capacity.LeaseID(l.Cluster, l.Generation)
	}
	return l, nil
}

func (c *misbehavingCP) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	return c.store.ReleaseBatch(ctx, refs)
}

// TestWorkerRunsNoMoreThanItsLeasesOfAMisbehavingControlPlane: a control plane that grants one
// lease twice (to a query running on it, or after it was given back), grants revoked leases or
// another cluster's, answers revoked leases as renewed, and grants over the cap, does not make
// a worker run more queries than the cap, nor two on one lease, nor any on a lease answered
// revoked past its renewal; and every lie the worker can tell is counted in
// queryflux_capacity_misbehaving_answers_total. Plant: LeaseGuard.Acquire without suspectGrant.
func TestWorkerRunsNoMoreThanItsLeasesOfAMisbehavingControlPlane(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := sim.New(sim.Opts{Seed: rapid.Uint64().Draw(rt, "seed")})
		n := s.AddNode("w", nil)
		limit := rapid.IntRange(1, 3).Draw(rt, "cap")
		cp := &misbehavingCP{store: capacity.NewMemory(), now: n.Env().Now, badRenewals: map[string]time.Time{},
			acquires: rapid.SliceOfN(rapid.IntRange(0, 4), 1, 30).Draw(rt, "acquires"),
			renewals: rapid.SliceOfN(rapid.IntRange(0, 2), 1, 30).Draw(rt, "renewals")}
		m := capacity.NewMetrics(nil)
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: cp, Holder: "w", Metrics: m,
			LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond, AcquireTimeout: time.Second, OnLeaseLost: capacity.OnLeaseLostCancel})
		if err != nil {
			rt.Fatal(err)
		}
		type running struct {
			lease   string
			stopped bool
		}
		var queries []*running
		var failure string
		check := func(when string) {
			live := map[string]bool{}
			for _, q := range queries {
				if q.stopped {
					continue
				}
				if live[q.lease] && failure == "" {
					failure = fmt.Sprintf("%s: two queries run on lease %s", when, q.lease)
				}
				live[q.lease] = true
			}
			if len(live) > limit && failure == "" {
				failure = fmt.Sprintf("%s: %d queries run, cap %d", when, len(live), limit)
			}
		}
		s.Spawn(n, "checker", func() {
			// A query on a lease answered revoked (or another lease) to its renewal is stopped then.
			for n.Env().Sleep(n.Ctx(), 10*time.Millisecond) == nil {
				for _, q := range queries {
					if at, ok := cp.badRenewals[q.lease]; ok && !q.stopped && n.Env().Now().Sub(at) >= 10*time.Millisecond && failure == "" {
						failure = fmt.Sprintf("%v: a query runs on lease %s, whose renewal was answered revoked or with another lease %v ago", s.Elapsed(), q.lease, cp.now().Sub(at))
					}
				}
			}
		})
		workers := rapid.IntRange(1, 4).Draw(rt, "query loops")
		s.Spawn(n, "guard", func() { g.Start(n.Ctx()) })
		for w := range workers {
			s.Spawn(n, fmt.Sprintf("queries-%d", w), func() {
				ctx, e := n.Ctx(), n.Env()
				for i := 0; ctx.Err() == nil && i < 40; i++ {
					slot, err := g.Acquire(ctx, "c", limit)
					if err != nil {
						_ = e.Sleep(ctx, time.Duration(50+e.Rand().Int64N(200))*time.Millisecond)
						continue
					}
					q := &running{lease: slot.(interface{ Lease() capacity.Lease }).Lease().ID}
					queries = append(queries, q)
					check(fmt.Sprintf("%v, grant %s", s.Elapsed(), q.lease))
					qctx, cancel := e.WithCancel(ctx)
					slot.OnLost(func() { q.stopped = true; cancel() })
					_ = e.Sleep(qctx, time.Duration(100+e.Rand().Int64N(4000))*time.Millisecond)
					cancel()
					q.stopped = true
					slot.Release()
				}
			})
		}
		if err := s.Run(2 * time.Minute); err != nil {
			rt.Fatal(err)
		}
		if failure != "" {
			rt.Fatal(failure)
		}
		counted := 0.0
		for _, kind := range []string{"malformed", "revoked", "duplicate", "ended", "other"} {
			counted += testutil.ToFloat64(m.MisbehavingAnswers.WithLabelValues("c", kind))
		}
		counted += testutil.ToFloat64(m.MisbehavingAnswers.WithLabelValues("elsewhere", "malformed"))
		if int(counted) != cp.lies {
			rt.Fatalf("the control plane lied %d times, %v counted", cp.lies, counted)
		}
	})
}

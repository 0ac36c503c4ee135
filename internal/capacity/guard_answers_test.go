package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// refusedRenewals is a LeaseClient whose renewals are answered err from the first one on: a
// control plane that no longer has the lease (reclaimed, or held by another guard), or none that
// answers (a partition).
type refusedRenewals struct {
	capacity.LeaseClient
	err error
}

func (r *refusedRenewals) Renew(context.Context, capacity.LeaseRef, time.Duration, time.Time) (capacity.Lease, error) {
	return capacity.Lease{}, r.err
}

// failingBatchRenewals renews in batches (a BatchRenewer that reports no contention), and a
// whole batch fails while down: no answer for any of its leases.
type failingBatchRenewals struct {
	capacity.LeaseClient
	down    bool
	batches int
}

func (f *failingBatchRenewals) RenewBatch(ctx context.Context, refs []capacity.LeaseRef, ttl time.Duration, now time.Time) ([]capacity.Renewed, error) {
	f.batches++
	if f.down {
		return nil, errors.New("connection refused")
	}
	out := make([]capacity.Renewed, len(refs))
	for i, ref := range refs {
		out[i].Lease, out[i].Err = f.Renew(ctx, ref, ttl, now)
	}
	return out, nil
}

// TestRenewalAnswersDecideWhenAQueryStops: a lease whose renewal the control plane refuses (it
// reclaimed the lease, which it may grant again, or another guard holds the lease) stops
// counting at once: its query's OnLost runs at that renewal, not at the lease's local fence time
// (the term less the drift margin), and it is no coordination failure. A renewal that gets no
// answer (a partition; a batch round trip that failed as a whole) is one: counted, and the
// lease counts until its fence time, not a moment longer.
func TestRenewalAnswersDecideWhenAQueryStops(t *testing.T) {
	// Renewals every second, failed ones tried again every 100 ms; the fence at 2.55 s falls between
	// two tries (2.5 and 2.6 s): a fence only at the next try would be late.
	const ttl, drift = 3 * time.Second, 450 * time.Millisecond
	for _, c := range []struct {
		name        string
		client      func() capacity.LeaseClient
		lostBy      time.Duration // OnLost ran by (after the grant)
		notBefore   time.Duration // ... and not before
		failuresMin float64       // coordination_failures_total{op="renew"}
	}{
		{"reclaimed", func() capacity.LeaseClient {
			return &refusedRenewals{capacity.NewMemory(), fmt.Errorf("lease reclaimed: %w", capacity.ErrStaleGeneration)}
		}, 1100 * time.Millisecond, 900 * time.Millisecond, 0},
		{"another session's", func() capacity.LeaseClient {
			return &refusedRenewals{capacity.NewMemory(), fmt.Errorf("registered again: %w", capacity.ErrNotHolder)}
		}, 1100 * time.Millisecond, 900 * time.Millisecond, 0},
		{"no answer", func() capacity.LeaseClient {
			return &refusedRenewals{capacity.NewMemory(), errors.New("connection refused")}
		}, ttl - drift + 10*time.Millisecond, ttl - drift - 10*time.Millisecond, 1},
		{"a failed batch", func() capacity.LeaseClient {
			return &failingBatchRenewals{LeaseClient: capacity.NewMemory(), down: true}
		}, ttl - drift + 10*time.Millisecond, ttl - drift - 10*time.Millisecond, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			metrics := capacity.NewMetrics(nil)
			simChecks(t, 2, "w", 10*time.Second, func(n *sim.Node, check func(string, bool)) {
				g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: c.client(), Holder: "w",
					LeaseTTL: ttl, DriftMargin: drift, Metrics: metrics})
				if err != nil {
					panic(err)
				}
				g.Start(n.Ctx())
				slot, err := g.Acquire(n.Ctx(), "c", 1)
				if err != nil {
					panic(err)
				}
				granted, lostAt := n.Env().Now(), time.Time{}
				slot.OnLost(func() { lostAt = n.Env().Now() })
				sleep(n.Ctx(), n.Env(), 4*time.Second)
				after := lostAt.Sub(granted)
				check(fmt.Sprintf("OnLost ran %v after the grant, want in [%v, %v]", after, c.notBefore, c.lostBy),
					!lostAt.IsZero() && after >= c.notBefore && after <= c.lostBy && slot.Lost())
				failures := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("renew"))
				check(fmt.Sprintf("%v renewal failures counted, want at least %v (none for a refusal)", failures, c.failuresMin),
					failures >= c.failuresMin && (c.failuresMin > 0 || failures == 0))
				slot.Release()
			})
		})
	}
}

// TestFailedAcquireIsCountedAndNamed: an acquire the control plane does not answer is counted
// in queryflux_coordination_failures_total{op="acquire"} and answered "coordination unavailable"
// naming the cluster (failClosed); one it refuses as invalid is neither.
func TestFailedAcquireIsCountedAndNamed(t *testing.T) {
	for _, c := range []struct {
		err      error
		failures float64
		want     error
	}{
		{errors.New("connection refused"), 1, capacity.ErrUnavailable},
		{fmt.Errorf("bad request: %w", capacity.ErrInvalid), 0, capacity.ErrInvalid},
	} {
		metrics := capacity.NewMetrics(nil)
		simChecks(t, 1, "w", time.Minute, func(n *sim.Node, check func(string, bool)) {
			client := &refusingAcquires{LeaseClient: capacity.NewMemory(), err: c.err}
			g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w", Metrics: metrics})
			if err != nil {
				panic(err)
			}
			_, err = g.Acquire(n.Ctx(), "cl1", 2)
			check(fmt.Sprintf("%v: answered %v, want %v naming the cluster", c.err, err, c.want),
				errors.Is(err, c.want) && (c.want != capacity.ErrUnavailable || strings.Contains(err.Error(), "cl1")))
			got := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("acquire"))
			check(fmt.Sprintf("%v: %v acquire failures counted, want %v", c.err, got, c.failures), got == c.failures)
		})
	}
}

// TestMisbehavingGrantIsCountedAsDenied: an acquire answered with a lease another worker holds
// (a control plane handing one lease to two workers) is denied to its query, and counted as
// such (queryflux_capacity_lease_denied_total) besides the misbehaving answer.
func TestMisbehavingGrantIsCountedAsDenied(t *testing.T) {
	metrics := capacity.NewMetrics(nil)
	store := capacity.NewMemory()
	client := &grantsAgain{countingClient: countingClient{LeaseClient: store}}
	simChecks(t, 1, "w", time.Minute, func(n *sim.Node, check func(string, bool)) {
		theirs, err := store.Acquire(n.Ctx(), "c", "other", 2, time.Minute, n.Env().Now())
		if err != nil {
			panic(err)
		}
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w", Metrics: metrics})
		if err != nil {
			panic(err)
		}
		client.again = &theirs
		slot, err := g.Acquire(n.Ctx(), "c", 2)
		check(fmt.Sprintf("another worker's lease granted: denied (%v)", err), slot == nil && errors.Is(err, capacity.ErrAtCapacity))
		check("counted denied", testutil.ToFloat64(metrics.LeaseDenied.WithLabelValues("c")) == 1)
		check("counted misbehaving", testutil.ToFloat64(metrics.MisbehavingAnswers.WithLabelValues("c", "holder")) == 1)
		check("nothing held here", g.Held("c") == 0)
	})
}

// TestFailedWatchIsCountedAndRetriedLater: a busy worker reusing its leases against a control
// plane whose contention watch fails (500) counts each failure
// (queryflux_coordination_failures_total{op="watch"}) and watches again watchRetry (250 ms)
// later: it neither hammers the control plane with watches nor stops watching for good.
func TestFailedWatchIsCountedAndRetriedLater(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	store := capacity.NewMemory()
	watches := 0
	s.AddNode("cp", func(n *sim.Node) http.Handler {
		api := capacity.NewAPIHandler(store, store, n.Env(), nil)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == capacity.PathWatch {
				watches++
				http.Error(w, "the watch broke", http.StatusInternalServerError)
				return
			}
			api.ServeHTTP(w, r)
		})
	})
	w := s.AddNode("w1", nil)
	metrics := capacity.NewMetrics(nil)
	s.Spawn(w, "test", func() {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: w.Env(), Client: capacity.NewRemote("http://cp", w.Client(), nil),
			Holder: "w1", Metrics: metrics})
		if err != nil {
			panic(err)
		}
		g.Start(w.Ctx())
		e := w.Env()
		busyClient(query.WithAffinity(w.Ctx(), 1), e, g, 2, time.Millisecond, e.Now().Add(2*time.Second), func(capacity.Slot) {})
	})
	if err := s.Run(2100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	failures := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("watch"))
	t.Logf("2 s busy: %d watches, %v failures counted", watches, failures)
	if watches < 4 || watches > 10 || failures != float64(watches) {
		t.Errorf("2 s busy against a failing watch: %d watches sent, %v failures counted; want 4-10 (one per 250 ms), each counted", watches, failures)
	}
}

// TestWatchFollowsTheReusedClustersWithoutFailures: a worker that reuses leases of one cluster,
// then of a second one too, holds one watch at a time that covers what it reuses (the watch in
// flight is replaced for a wider one: that is no failure of the control plane's), and once it
// reuses nothing (its clients stopped), it stops watching: no watch of nothing, every 250 ms,
// for the rest of its life.
func TestWatchFollowsTheReusedClustersWithoutFailures(t *testing.T) {
	f := newAPIFleet(6)
	w := f.s.AddNode("w1", nil)
	metrics := capacity.NewMetrics(nil)
	var watchesAt map[string]int = map[string]int{}
	f.s.At(1500*time.Millisecond, func() { watchesAt["stopped"] = f.asked[capacity.PathWatch] })
	f.s.Spawn(w, "test", func() {
		g, e := f.guard(w, metrics), w.Env()
		ctx := query.WithAffinity(w.Ctx(), 1)
		e.Go(ctx, "on-d", func(ctx context.Context) {
			sleep(ctx, e, 300*time.Millisecond)
			busyOn(ctx, e, g, "d", 2, time.Millisecond, e.Now().Add(900*time.Millisecond), func(capacity.Slot) {})
		})
		busyClient(ctx, e, g, 2, time.Millisecond, e.Now().Add(1200*time.Millisecond), func(capacity.Slot) {})
	})
	if err := f.s.Run(4 * time.Second); err != nil {
		t.Fatal(err)
	}
	failures := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("watch"))
	stopped, all := watchesAt["stopped"], f.asked[capacity.PathWatch]
	t.Logf("watches by 1.5 s: %d, by 4 s: %d; %v failures", stopped, all, failures)
	if failures != 0 || stopped < 2 || all-stopped > 1 {
		t.Errorf("watches by 1.5 s: %d, from 1.5 s to 4 s: %d, %v watch failures counted; want a second watch for the second cluster, at most one after the clients stopped, no failures",
			stopped, all-stopped, failures)
	}
}

// slowFailures is a LeaseClient whose acquires fail (no answer) after the next of delays each.
type slowFailures struct {
	capacity.LeaseClient
	e      env.Env
	delays []time.Duration
}

func (c *slowFailures) Acquire(ctx context.Context, _, _ string, _ int, _ time.Duration, _ time.Time) (capacity.Lease, error) {
	d := c.delays[0]
	c.delays = c.delays[1:]
	_ = c.e.Sleep(ctx, d)
	return capacity.Lease{}, errors.New("connection reset")
}

// TestLocalLimitsKeepsACapLoweredMeanwhile: under onUnavailable localLimits, an acquire whose
// cap was lowered (to 1) while it was in flight, and whose control plane then failed to answer,
// is denied when the node's own count already fills the lowered cap (a query at cap 3 was
// admitted locally meanwhile), and counted as denied: the node does not run two queries on a
// cluster whose cap is 1.
func TestLocalLimitsKeepsACapLoweredMeanwhile(t *testing.T) {
	metrics := capacity.NewMetrics(nil)
	denied := func() float64 { return testutil.ToFloat64(metrics.LeaseDenied.WithLabelValues("c")) }
	simChecks(t, 1, "w1", time.Minute, func(w *sim.Node, check func(string, bool)) {
		e := w.Env()
		client := &slowFailures{LeaseClient: capacity.NewMemory(), e: e, delays: []time.Duration{200 * time.Millisecond, 50 * time.Millisecond}}
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: client, Holder: "w1",
			OnUnavailable: capacity.OnUnavailableLocalLimits, Metrics: metrics})
		if err != nil {
			panic(err)
		}
		var earlier capacity.Slot
		e.Go(w.Ctx(), "at-cap-3", func(ctx context.Context) {
			sleep(ctx, e, 10*time.Millisecond)
			s, err := g.Acquire(ctx, "c", 3)
			earlier = s
			check(fmt.Sprintf("the acquire at cap 3 admitted locally (%v)", err), err == nil && g.Local("c") == 1)
		})
		slot, err := g.Acquire(w.Ctx(), "c", 1)
		check(fmt.Sprintf("the acquire at cap 1, in flight meanwhile: denied (%v, %v), counted (%v)", slot, err, denied()),
			slot == nil && errors.Is(err, capacity.ErrAtCapacity) && denied() == 1 && g.Local("c") == 1)
		if earlier != nil {
			earlier.Release()
		}
	})
}

package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// fleet is a simulated control plane ("cp", in-memory store, API, sweeper) and workers, each
// with a Remote client, a LeaseGuard and a query loop. It counts the queries running at every
// instant from outside (the oracle): granted and neither released nor told to stop.
type fleet struct {
	s       *sim.Sim
	store   *capacity.Memory
	limit   int
	running int // queries executing now, fleet-wide
	maxSeen int
	grants  int
	lost    int
	failure string
}

type fleetOpts struct {
	seed        uint64
	workers     int
	limit       int
	ttl, drift  time.Duration
	onLeaseLost string
}

func newFleet(o fleetOpts) *fleet {
	f := &fleet{s: sim.New(sim.Opts{Seed: o.seed}), store: capacity.NewMemory(), limit: o.limit}
	f.s.Net().SetDefault(sim.Link{Latency: sim.Uniform(time.Millisecond, 5*time.Millisecond)})
	f.s.AddNode("cp", func(n *sim.Node) http.Handler {
		sw := &capacity.Sweeper{Env: n.Env(), Store: f.store, Locks: f.store, Owner: "cp", Every: 250 * time.Millisecond}
		n.Env().Go(n.Ctx(), "sweeper", sw.Run)
		return capacity.NewAPIHandler(f.store, f.store, n.Env(), nil)
	})
	for i := range o.workers {
		name := fmt.Sprintf("w%d", i+1)
		f.s.AddNode(name, func(n *sim.Node) http.Handler {
			g, err := capacity.NewLeaseGuard(capacity.GuardOptions{
				Env: n.Env(), Client: capacity.NewRemote("http://cp", n.Client(), nil), Holder: name,
				LeaseTTL: o.ttl, DriftMargin: o.drift, OnLeaseLost: o.onLeaseLost,
				AcquireTimeout: 500 * time.Millisecond,
			})
			if err != nil {
				panic(err)
			}
			g.Start(n.Ctx())
			for q := range 3 { // three query loops per worker
				n.Env().Go(n.Ctx(), fmt.Sprintf("queries-%d", q), func(ctx context.Context) { f.queries(ctx, n.Env(), g) })
			}
			return nil
		})
	}
	return f
}

// queries runs queries of random length on cluster "c" until ctx ends.
func (f *fleet) queries(ctx context.Context, e env.Env, g capacity.Guard) {
	for ctx.Err() == nil {
		slot, err := g.Acquire(ctx, "c", f.limit)
		if err != nil {
			pause := time.Duration(50+e.Rand().Int64N(250)) * time.Millisecond
			if e.Sleep(ctx, pause) != nil {
				return
			}
			continue
		}
		f.grants++
		f.running++
		f.maxSeen = max(f.maxSeen, f.running)
		if f.running > f.limit && f.failure == "" {
			f.failure = fmt.Sprintf("%d queries running at %v, cap %d", f.running, f.s.Elapsed(), f.limit)
		}
		qctx, cancel := e.WithCancel(ctx)
		stopped := false
		slot.OnLost(func() { // the query is cancelled at once
			if !stopped {
				stopped = true
				f.running--
				f.lost++
			}
			cancel()
		})
		_ = e.Sleep(qctx, time.Duration(200+e.Rand().Int64N(6000))*time.Millisecond)
		cancel()
		if !stopped {
			stopped = true
			f.running--
		}
		slot.Release()
	}
}

func (f *fleet) partition(at, d time.Duration, worker string) {
	f.s.At(at, func() { f.s.Net().PartitionBoth(worker, "cp") })
	f.s.At(at+d, func() { f.s.Net().HealBoth(worker, "cp") })
}

// TestFencingKeepsCapUnderPartitionsAndDrift: workers whose links to the control plane are cut
// at random, with clocks running up to 10% fast or slow, never run more than cap queries at
// once: a cut-off worker stops its query before the control plane reclaims and regrants the
// lease. (TTL 3 s, drift margin 0.5 s covers rates down to 1 - 0.5/3.)
func TestFencingKeepsCapUnderPartitionsAndDrift(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		o := fleetOpts{
			seed:    rapid.Uint64().Draw(rt, "seed"),
			workers: rapid.IntRange(2, 4).Draw(rt, "workers"),
			limit:   rapid.IntRange(1, 3).Draw(rt, "cap"),
			ttl:     3 * time.Second, drift: 500 * time.Millisecond,
			onLeaseLost: capacity.OnLeaseLostCancel,
		}
		f := newFleet(o)
		for i := range o.workers {
			name := fmt.Sprintf("w%d", i+1)
			rate := 0.9 + 0.2*rapid.Float64Range(0, 1).Draw(rt, "rate-"+name)
			f.s.At(0, func() { _ = f.s.Node(name).SetClock(0, rate) })
			for range rapid.IntRange(0, 3).Draw(rt, "cuts-"+name) {
				at := time.Duration(rapid.IntRange(0, 50).Draw(rt, "cut-at")) * time.Second
				d := time.Duration(rapid.IntRange(1, 10).Draw(rt, "cut-len")) * time.Second
				f.partition(at, d, name)
			}
		}
		if err := f.s.Run(60 * time.Second); err != nil {
			rt.Fatal(err)
		}
		if f.failure != "" {
			rt.Fatalf("seed %d: %s", o.seed, f.failure)
		}
		if f.grants < 10 {
			rt.Fatalf("only %d grants: the workload did not run", f.grants)
		}
	})
}

// TestFencingIsWhatKeepsTheCap is the control: the same world with a worker clock running at
// 60% speed (beyond the drift margin) and a long cut does break the cap, so the oracle above
// can see a failure.
func TestFencingIsWhatKeepsTheCap(t *testing.T) {
	broke := 0
	for seed := range uint64(10) {
		f := newFleet(fleetOpts{seed: seed, workers: 2, limit: 1, ttl: 3 * time.Second, drift: 500 * time.Millisecond,
			onLeaseLost: capacity.OnLeaseLostCancel})
		f.s.At(0, func() { _ = f.s.Node("w1").SetClock(0, 0.6) })
		f.partition(5*time.Second, 20*time.Second, "w1")
		if err := f.s.Run(40 * time.Second); err != nil {
			t.Fatal(err)
		}
		if f.failure != "" {
			broke++
		}
	}
	if broke == 0 {
		t.Fatal("a worker clock beyond the drift margin never broke the cap: the oracle sees nothing")
	}
}

// TestOverrunKeepsQueryAndCounts: with onLeaseLost overrun a cut-off worker keeps its query
// (Lost stays false) and counts queryflux_capacity_overrun_total.
func TestOverrunKeepsQueryAndCounts(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 1})
	store := capacity.NewMemory()
	s.AddNode("cp", func(n *sim.Node) http.Handler { return capacity.NewAPIHandler(store, store, n.Env(), nil) })
	metrics := capacity.NewMetrics(nil)
	var lostCalled bool
	var slot capacity.Slot
	w := s.AddNode("w1", nil)
	s.Spawn(w, "test", func() {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: w.Env(), Client: capacity.NewRemote("http://cp", w.Client(), nil),
			Holder: "w1", LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond, OnLeaseLost: capacity.OnLeaseLostOverrun, Metrics: metrics})
		if err != nil {
			panic(err)
		}
		g.Start(w.Ctx())
		slot, err = g.Acquire(w.Ctx(), "c", 1)
		if err != nil {
			panic(err)
		}
		slot.OnLost(func() { lostCalled = true })
	})
	s.At(time.Second, func() { s.Net().PartitionBoth("w1", "cp") })
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if slot == nil || slot.Lost() || lostCalled {
		t.Fatalf("overrun mode: slot %v lost=%v callback=%v; want kept", slot, slot != nil && slot.Lost(), lostCalled)
	}
	if got := testutil.ToFloat64(metrics.Overrun.WithLabelValues("c")); got != 1 {
		t.Fatalf("overrun counter %v, want 1", got)
	}
	if got := testutil.ToFloat64(metrics.LeasesLost.WithLabelValues("c", capacity.OnLeaseLostOverrun)); got != 1 {
		t.Fatalf("queryflux_capacity_leases_lost_total{action=overrun} %v, want 1", got)
	}
}

// TestUnavailablePolicies: with the control plane unreachable, failClosed refuses with
// ErrUnavailable and localLimits grants up to the cap from this worker's own count.
func TestUnavailablePolicies(t *testing.T) {
	for _, policy := range []string{capacity.OnUnavailableFailClosed, capacity.OnUnavailableLocalLimits} {
		s := sim.New(sim.Opts{Seed: 1})
		w := s.AddNode("w1", nil)
		var errs []error
		s.Spawn(w, "test", func() {
			g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: w.Env(), Client: capacity.NewRemote("http://cp-down", w.Client(), nil),
				Holder: "w1", OnUnavailable: policy})
			if err != nil {
				panic(err)
			}
			for range 3 {
				_, err := g.Acquire(w.Ctx(), "c", 2)
				errs = append(errs, err)
			}
		})
		if err := s.Run(time.Minute); err != nil {
			t.Fatal(err)
		}
		switch policy {
		case capacity.OnUnavailableFailClosed:
			for _, err := range errs {
				if !errors.Is(err, capacity.ErrUnavailable) {
					t.Fatalf("failClosed: %v, want ErrUnavailable", errs)
				}
			}
		default:
			if len(errs) != 3 || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], capacity.ErrAtCapacity) {
				t.Fatalf("localLimits: %v, want two slots then ErrAtCapacity", errs)
			}
		}
	}
}

// TestUnreachableControlPlaneIsNotAskedAgainAtOnce: under a partition that swallows requests, the
// first acquire waits out its timeout; those right after apply the policy at once (localLimits
// admits locally) instead of each waiting AcquireTimeout.
func TestUnreachableControlPlaneIsNotAskedAgainAtOnce(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 1})
	s.AddNode("cp", func(*sim.Node) http.Handler { return http.NotFoundHandler() })
	w := s.AddNode("w1", nil)
	s.Net().PartitionBoth("w1", "cp")
	var took []time.Duration
	var errs []error
	s.Spawn(w, "test", func() {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: w.Env(), Client: capacity.NewRemote("http://cp", w.Client(), nil),
			Holder: "w1", OnUnavailable: capacity.OnUnavailableLocalLimits, AcquireTimeout: 5 * time.Second})
		if err != nil {
			panic(err)
		}
		for range 3 {
			start := w.Env().Now()
			_, err := g.Acquire(w.Ctx(), "c", 3)
			took = append(took, w.Env().Now().Sub(start))
			errs = append(errs, err)
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 3 || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("localLimits under a partition: %v, want three local slots", errs)
	}
	if took[0] < 5*time.Second || took[1] > time.Millisecond || took[2] > time.Millisecond {
		t.Fatalf("acquire times %v: want the first to time out and the next two at once", took)
	}
}

package capacity_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// slowReleases is a store whose release batches take a while (or fail), counting acquires.
type slowReleases struct {
	capacity.LeaseClient
	env      env.Env
	delay    time.Duration
	fail     bool
	acquires int
}

func (c *slowReleases) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	c.acquires++
	return c.LeaseClient.Acquire(ctx, cluster, holder, limit, ttl, now)
}

func (c *slowReleases) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	if err := c.env.Sleep(ctx, c.delay); err != nil {
		return 0, err
	}
	if c.fail {
		return 0, errors.New("control plane unreachable")
	}
	return c.LeaseClient.ReleaseBatch(ctx, refs)
}

// TestPendingReleaseDeniesLocallyAndWakes: while this node's release of a cap-1 cluster is in
// flight, an acquire is denied without a round trip (the control plane still counts the lease);
// OnFreed runs once the batch lands and the next acquire is granted. When the batch fails,
// OnFreed runs too and acquires are sent again (the onUnavailable policy must get its say).
func TestPendingReleaseDeniesLocallyAndWakes(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	n := s.AddNode("w", nil)
	e := n.Env()
	client := &slowReleases{LeaseClient: capacity.NewMemory(), env: e, delay: 50 * time.Millisecond}
	var steps []string
	check := func(what string, ok bool) {
		if !ok {
			steps = append(steps, what)
		}
	}
	s.Spawn(n, "test", func() {
		ctx := n.Ctx()
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: client, Holder: "w"})
		if err != nil {
			panic(err)
		}
		freed := e.NewSignal()
		g.OnFreed(freed.Notify)
		g.Start(ctx)

		slot, err := g.Acquire(ctx, "c", 1)
		check("first acquire granted", err == nil)
		seen := freed.Seq()
		slot.Release()
		_, err = g.Acquire(ctx, "c", 1)
		check("acquire during the release denied", errors.Is(err, capacity.ErrAtCapacity))
		check("... without asking", client.acquires == 1)
		check("OnFreed ran after the batch", freed.Wait(ctx, seen) == nil && g.PendingReleases() == 0)
		slot, err = g.Acquire(ctx, "c", 1)
		check("acquire after the batch landed granted", err == nil && client.acquires == 2)

		client.fail = true
		seen = freed.Seq()
		slot.Release()
		check("OnFreed ran after a failed batch", freed.Wait(ctx, seen) == nil)
		_, err = g.Acquire(ctx, "c", 1)
		check("acquire after a failed batch asks", errors.Is(err, capacity.ErrAtCapacity) && client.acquires == 3)
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Error("not so: " + st)
	}
}

// carrier is a store that can carry releases on an acquire (like Remote), counting both ways.
type carrier struct {
	*capacity.Memory
	failAcquire     bool
	refuseCarry     bool // an older control plane: the release field is an unknown field
	carriedRefs     int
	releaseBatches  int
	acquireRequests int
}

func (c *carrier) AcquireReleasing(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []capacity.LeaseRef) (capacity.Lease, error) {
	c.acquireRequests++
	if c.failAcquire {
		return capacity.Lease{}, capacity.ErrUnavailable
	}
	if c.refuseCarry && len(release) > 0 {
		return capacity.Lease{}, capacity.ErrInvalid
	}
	// As the control plane in retry mode: decide first, then free what was carried.
	l, err := c.Memory.Acquire(ctx, cluster, holder, limit, ttl, now)
	if err != nil && !errors.Is(err, capacity.ErrAtCapacity) {
		return l, err
	}
	if _, rerr := c.Memory.ReleaseBatch(ctx, release); rerr != nil {
		return capacity.Lease{}, rerr
	}
	c.carriedRefs += len(release)
	return l, err
}

func (c *carrier) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	c.releaseBatches++
	return c.Memory.ReleaseBatch(ctx, refs)
}

// TestAcquireCarriesQueuedReleases: a release queued just before an acquire of another cluster
// rides on it (no release batch of its own); one of the same cluster does not (a worker must not
// win back its own slot ahead of others), it goes with the flusher; when that
// acquire fails, the carried release goes back to the flusher, which sends it; a control plane
// that refuses the release field (older version) gets a plain acquire.
func TestAcquireCarriesQueuedReleases(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 9})
	n := s.AddNode("w", nil)
	e := n.Env()
	client := &carrier{Memory: capacity.NewMemory()}
	var steps []string
	check := func(what string, ok bool) {
		if !ok {
			steps = append(steps, what)
		}
	}
	s.Spawn(n, "test", func() {
		ctx := n.Ctx()
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: client, Holder: "w",
			OnUnavailable: capacity.OnUnavailableFailClosed})
		if err != nil {
			panic(err)
		}
		g.Start(ctx)
		slot, err := g.Acquire(ctx, "c", 1)
		check("first acquire granted", err == nil)
		slot.Release()
		_, err = g.Acquire(ctx, "c", 1)
		check("a re-acquire of the same cluster does not carry its own release",
			errors.Is(err, capacity.ErrAtCapacity) && client.carriedRefs == 0 && g.PendingReleases() == 1)
		if e.Sleep(ctx, time.Second) != nil {
			return
		}
		check("the flusher sent that release", client.releaseBatches == 1 && g.PendingReleases() == 0)

		slot, err = g.Acquire(ctx, "c", 1)
		check("then the same cluster is granted", err == nil)
		slot.Release()
		other, err := g.Acquire(ctx, "d", 1)
		check("an acquire of another cluster carries the release, in one round trip",
			err == nil && client.carriedRefs == 1 && client.releaseBatches == 1 && g.PendingReleases() == 0)

		client.failAcquire = true
		other.Release()
		_, err = g.Acquire(ctx, "c", 1)
		check("failed acquire is unavailable", capacity.IsUnavailable(err))
		check("... and puts the release back", g.PendingReleases() == 1)
		if e.Sleep(ctx, time.Second) != nil {
			return
		}
		ls, _ := client.List(ctx, "d")
		check("the flusher sent it", client.releaseBatches == 2 && g.PendingReleases() == 0 && len(ls) == 0)

		client.failAcquire, client.refuseCarry = false, true
		slot, err = g.Acquire(ctx, "d", 2)
		check("acquire with nothing to carry granted", err == nil)
		slot.Release()
		_, err = g.Acquire(ctx, "c", 2)
		check("acquire refused with a carried release is asked again plainly", err == nil)
		if e.Sleep(ctx, time.Second) != nil {
			return
		}
		ls, _ = client.List(ctx, "d")
		check("... and the release went out on its own", client.releaseBatches == 3 && len(ls) == 0)
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Error("not so: " + st)
	}
}

// TestRemoteAcquireReleasingOverHTTP: the release rides on the acquire request and lands
// before the acquire is decided (cap 1 is granted again in the same request).
func TestRemoteAcquireReleasingOverHTTP(t *testing.T) {
	e := env.Real(nil)
	store := capacity.NewMemory()
	srv := httptest.NewServer(capacity.NewAPIHandler(store, store, e, nil))
	defer srv.Close()
	r := capacity.NewRemote(srv.URL, srv.Client(), nil)
	ctx := context.Background()
	first, err := r.Acquire(ctx, "c", "w", 1, time.Minute, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Acquire(ctx, "c", "w", 1, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("second acquire at cap 1: %v", err)
	}
	// The carried release still counts while the acquire is decided (a worker must not win back
	// its own slot ahead of others), and is freed after.
	if _, err := r.AcquireReleasing(ctx, "c", "w", 1, time.Minute, time.Time{}, []capacity.LeaseRef{first.Ref()}); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("acquire carrying the only lease's release at cap 1: %v, want ErrAtCapacity", err)
	}
	if ls, _ := store.List(ctx, "c"); len(ls) != 0 {
		t.Fatalf("the carried release was not applied: %+v", ls)
	}
	second, err := r.AcquireReleasing(ctx, "c", "w", 2, time.Minute, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	third, err := r.AcquireReleasing(ctx, "c", "w", 2, time.Minute, time.Time{}, []capacity.LeaseRef{second.Ref()})
	if err != nil {
		t.Fatalf("acquire under the cap carrying a release: %v", err)
	}
	ls, _ := store.List(ctx, "c")
	if len(ls) != 1 || ls[0].ID != third.ID || ls[0].Generation != third.Generation {
		t.Fatalf("leases held: %+v, want only %+v", ls, third)
	}
}

// TestUndeliverableReleaseIsCountedWhenItsLeaseExpires: a release the control plane never
// takes is kept while its lease could still be held there, then given up and counted
// (queryflux_capacity_releases_dropped_total{reason="expired"}), not silently lost.
func TestUndeliverableReleaseIsCountedWhenItsLeaseExpires(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 6})
	n := s.AddNode("w", nil)
	e := n.Env()
	client := &slowReleases{LeaseClient: capacity.NewMemory(), env: e, delay: time.Millisecond, fail: true}
	metrics := capacity.NewMetrics(nil)
	dropped := func() float64 {
		return testutil.ToFloat64(metrics.ReleasesDropped.WithLabelValues("c", "expired"))
	}
	var pendingEarly, droppedEarly, pendingLate int
	var droppedLate float64
	s.Spawn(n, "test", func() {
		ctx := n.Ctx()
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: client, Holder: "w",
			LeaseTTL: 2 * time.Second, DriftMargin: 500 * time.Millisecond, Metrics: metrics})
		if err != nil {
			panic(err)
		}
		g.Start(ctx)
		slot, err := g.Acquire(ctx, "c", 1)
		if err != nil {
			panic(err)
		}
		slot.Release()
		_ = e.Sleep(ctx, time.Second)
		pendingEarly, droppedEarly = g.PendingReleases(), int(dropped())
		_ = e.Sleep(ctx, 20*time.Second)
		pendingLate, droppedLate = g.PendingReleases(), dropped()
	})
	if err := s.Run(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if pendingEarly != 1 || droppedEarly != 0 {
		t.Fatalf("within the lease's term: %d pending, %d dropped; want the release kept", pendingEarly, droppedEarly)
	}
	if pendingLate != 0 || droppedLate != 1 {
		t.Fatalf("past the lease's term: %d pending, %v dropped; want it given up and counted once", pendingLate, droppedLate)
	}
}

// TestFullReleaseQueueDropsCountedAndLogged: while the control plane takes no release, at most
// ReleaseQueueMax wait for it; each release past that is dropped (its lease held there until
// its term), counted as queryflux_capacity_releases_dropped_total{reason="queue-full"}, and the
// queue's filling is logged once.
func TestFullReleaseQueueDropsCountedAndLogged(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 7})
	n := s.AddNode("w", nil)
	e := n.Env()
	client := &slowReleases{LeaseClient: capacity.NewMemory(), env: e, delay: time.Second, fail: true}
	metrics := capacity.NewMetrics(nil)
	var pending int
	s.Spawn(n, "test", func() {
		ctx := n.Ctx()
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: client, Holder: "w",
			ReleaseQueueMax: 2, Metrics: metrics})
		if err != nil {
			panic(err)
		}
		g.Start(ctx)
		var slots []capacity.Slot
		for range 5 {
			slot, err := g.Acquire(ctx, "c", 5)
			if err != nil {
				panic(err)
			}
			slots = append(slots, slot)
		}
		for _, slot := range slots {
			slot.Release()
		}
		pending = g.PendingReleases()
	})
	if err := s.Run(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(metrics.ReleasesDropped.WithLabelValues("c", "queue-full")); pending != 2 || got != 3 {
		t.Fatalf("5 releases with room for 2: %d pending, %v dropped as queue-full; want 2 and 3", pending, got)
	}
	logs := strings.Join(s.Logs(), "\n")
	if n := strings.Count(logs, "release queue full"); n != 1 {
		t.Fatalf("the full queue logged %d times, want once:\n%s", n, logs)
	}
}

// A release queue bound below zero is refused by name.
func TestNegativeReleaseQueueMaxRefused(t *testing.T) {
	_, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: env.Real(nil), Client: capacity.NewMemory(), Holder: "w", ReleaseQueueMax: -1})
	if !errors.Is(err, capacity.ErrInvalid) || !strings.Contains(err.Error(), "release queue bound") {
		t.Fatalf("ReleaseQueueMax -1: %v", err)
	}
}

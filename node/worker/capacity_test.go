package worker_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/sim"
)

// TestSimCapacityAcrossWorkers: two workers share cluster c (cap 2) through the control plane.
// Denials reach the proxy core as proxy.ErrNoSlot; a released slot is granted to the other
// worker once the release batch lands; a worker cut off from the control plane fences its
// lease (Lost, OnLost runs) before the control plane reclaims it for the other worker.
func TestSimCapacityAcrossWorkers(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 7})
	t.Cleanup(s.Close)
	leases := capacity.NewMemory()
	s.AddNode("cp", func(n *sim.Node) http.Handler {
		cp := controlplane.New(n.Env(), controlplane.Config{WorkerSecret: "s3cret", HeartbeatInterval: 10 * time.Second,
			StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
		if err := cp.Start(n.Ctx()); err != nil {
			t.Errorf("control plane start: %v", err)
		}
		sw := controlplane.MountCapacity(n.Env(), cp, controlplane.CapacityConfig{Store: leases, Locks: leases, Owner: "cp", SweepEvery: 500 * time.Millisecond})
		n.Env().Go(n.Ctx(), "capacity-sweeper", sw.Run)
		return cp.Handler()
	})
	guards := map[string]proxy.Guard{}
	coord := config.Coordination{Mode: config.CoordinationControlPlane, OnUnavailable: config.OnUnavailableFailClosed,
		OnLeaseLost: config.OnLeaseLostCancel, LeaseTTLSecs: 6, DriftMarginSecs: 1}
	for _, name := range []string{"w1", "w2"} {
		s.AddNode(name, func(n *sim.Node) http.Handler {
			w := worker.New(n.Env(), worker.Config{ControlPlaneURL: "http://cp", Secret: "s3cret", Name: n.Name()}, n.Client())
			g, err := worker.NewCapacityGuard(n.Env(), w, coord, nil)
			if err != nil {
				t.Errorf("guard: %v", err)
				return nil
			}
			w.Start(n.Ctx())
			g.Start(n.Ctx())
			guards[n.Name()] = g.Guard()
			return w.OpsHandler()
		})
	}
	var steps []string
	var slots []proxy.Slot
	var lostAt, reclaimedAt time.Duration
	do := func(at time.Duration, node string, fn func(ctx context.Context)) {
		s.At(at, func() { s.Spawn(s.Node(node), "step", func() { fn(s.Node(node).Ctx()) }) })
	}
	expect := func(what string, err error, want error) {
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			steps = append(steps, what+": got "+errString(err)+", want "+errString(want))
		}
	}
	do(time.Second, "w1", func(ctx context.Context) {
		for i := range 3 {
			slot, err := guards["w1"].Acquire(ctx, "c", 2)
			if i < 2 {
				expect("w1 acquire", err, nil)
				slots = append(slots, slot)
				continue
			}
			expect("w1 third acquire", err, proxy.ErrNoSlot)
		}
	})
	do(2*time.Second, "w2", func(ctx context.Context) {
		_, err := guards["w2"].Acquire(ctx, "c", 2)
		expect("w2 acquire at cap", err, proxy.ErrNoSlot)
	})
	do(3*time.Second, "w1", func(ctx context.Context) {
		slots[0].Release()
		slots[1].(capacity.Slot).OnLost(func() { lostAt = s.Elapsed() })
	})
	do(4*time.Second, "w2", func(ctx context.Context) {
		_, err := guards["w2"].Acquire(ctx, "c", 2)
		expect("w2 acquire after w1's release", err, nil)
	})
	s.At(5*time.Second, func() { s.Net().PartitionBoth("w1", "cp") })
	for at := 5 * time.Second; at < 30*time.Second; at += 100 * time.Millisecond {
		s.At(at, func() {
			if reclaimedAt == 0 && len(must(leases.List(context.Background(), "c"))) < 2 {
				reclaimedAt = s.Elapsed()
			}
		})
	}
	if err := s.Run(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Error(st)
	}
	if lostAt == 0 || reclaimedAt == 0 || lostAt >= reclaimedAt {
		t.Fatalf("w1's lease lost at %v, reclaimed by the control plane at %v: the worker must stop first", lostAt, reclaimedAt)
	}
	t.Logf("lease lost on w1 at %v, reclaimed at %v", lostAt, reclaimedAt)
	if !slots[1].(capacity.Slot).Lost() {
		t.Fatal("Lost() false after OnLost ran")
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

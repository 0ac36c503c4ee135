package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/node/workerapi"
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

// TestSimRogueReregistrationFencesTheOldSession: a rogue holding the worker secret registers
// under w1's name while w1 holds the whole cap. Leases belong to the registration session, so
// the rogue's releases of w1's leases are refused (403) and free nothing; w1, its token revoked,
// registers again (a new session), finds its renewals refused and fences its queries before
// the control plane reclaims the old session's leases; the cap is never exceeded, and w1's new
// session is granted slots once they are reclaimed.
func TestSimRogueReregistrationFencesTheOldSession(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 11})
	t.Cleanup(s.Close)
	leases := capacity.NewMemory()
	s.AddNode("cp", func(n *sim.Node) http.Handler {
		cp := controlplane.New(n.Env(), controlplane.Config{WorkerSecret: "s3cret", HeartbeatInterval: time.Second,
			StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
		if err := cp.Start(n.Ctx()); err != nil {
			t.Errorf("control plane start: %v", err)
		}
		sw := controlplane.MountCapacity(n.Env(), cp, controlplane.CapacityConfig{Store: leases, Locks: leases, Owner: "cp", SweepEvery: 500 * time.Millisecond})
		n.Env().Go(n.Ctx(), "capacity-sweeper", sw.Run)
		return cp.Handler()
	})
	var guard proxy.Guard
	coord := config.Coordination{Mode: config.CoordinationControlPlane, OnUnavailable: config.OnUnavailableFailClosed,
		OnLeaseLost: config.OnLeaseLostCancel, LeaseTTLSecs: 6, DriftMarginSecs: 1}
	s.AddNode("w1", func(n *sim.Node) http.Handler {
		w := worker.New(n.Env(), worker.Config{ControlPlaneURL: "http://cp", Secret: "s3cret", Name: "w1"}, n.Client())
		g, err := worker.NewCapacityGuard(n.Env(), w, coord, nil)
		if err != nil {
			t.Errorf("guard: %v", err)
			return nil
		}
		w.Start(n.Ctx())
		g.Start(n.Ctx())
		guard = g.Guard()
		return w.OpsHandler()
	})
	rogue := s.AddNode("rogue", nil)
	var lostAt, reclaimedAt, regrantedAt time.Duration
	var failures []string
	s.At(time.Second, func() {
		s.Spawn(s.Node("w1"), "acquire", func() {
			for range 2 {
				slot, err := guard.Acquire(s.Node("w1").Ctx(), "c", 2)
				if err != nil {
					failures = append(failures, "w1 acquire: "+err.Error())
					return
				}
				slot.(capacity.Slot).OnLost(func() {
					if lostAt == 0 {
						lostAt = s.Elapsed()
					}
					s.Spawn(s.Node("w1"), "query-cancelled", slot.Release) // the fenced query ends
				})
			}
		})
	})
	var held []capacity.Lease
	// Halfway between w1's renewals (granted at 1 s, renewed every 2 s): had w1 called the control
	// plane between the rogue's register and its release (at 3 s its keeper does), w1 would have
	// registered again first, and the rogue's token would be the superseded one.
	s.At(2500*time.Millisecond, func() {
		held = must(leases.List(context.Background(), "c"))
		s.Spawn(rogue, "rogue", func() {
			ctx := rogue.Ctx()
			token, err := registerAs(ctx, rogue.Client(), "w1")
			if err != nil {
				failures = append(failures, "rogue register: "+err.Error())
				return
			}
			r := capacity.NewRemote("http://cp", rogue.Client(), func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+token) })
			refs := []capacity.LeaseRef{held[0].Ref(), held[1].Ref()}
			if _, err := r.ReleaseBatch(ctx, refs); !errors.Is(err, capacity.ErrNotHolder) {
				failures = append(failures, "rogue release of w1's leases: "+errString(err))
			}
			if _, err := r.Renew(ctx, refs[0], 6*time.Second, time.Time{}); !errors.Is(err, capacity.ErrNotHolder) {
				failures = append(failures, "rogue renewal of w1's lease: "+errString(err))
			}
		})
	})
	for at := 3 * time.Second; at < 40*time.Second; at += 100 * time.Millisecond {
		s.At(at, func() {
			ls := must(leases.List(context.Background(), "c"))
			if len(ls) > 2 {
				failures = append(failures, fmt.Sprintf("%d leases at cap 2", len(ls)))
			}
			old := 0
			for _, l := range ls {
				if l.Holder == held[0].Holder {
					old++
				}
			}
			if reclaimedAt == 0 && old == 0 {
				reclaimedAt = s.Elapsed()
				s.Spawn(s.Node("w1"), "acquire-again", func() {
					if _, err := guard.Acquire(s.Node("w1").Ctx(), "c", 2); err == nil {
						regrantedAt = s.Elapsed()
					}
				})
			}
		})
	}
	if err := s.Run(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
	if lostAt == 0 || reclaimedAt == 0 || lostAt >= reclaimedAt || regrantedAt < reclaimedAt {
		t.Fatalf("w1's queries fenced at %v, the old session's leases reclaimed at %v, w1 granted again at %v: want fenced < reclaimed <= granted",
			lostAt, reclaimedAt, regrantedAt)
	}
	t.Logf("fenced at %v, reclaimed at %v, granted again at %v", lostAt, reclaimedAt, regrantedAt)
}

// registerAs registers name with the worker secret through client and returns the token.
func registerAs(ctx context.Context, client *http.Client, name string) (string, error) {
	body := fmt.Sprintf(`{"name":%q,"version":"rogue"}`, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://cp"+workerapi.PathRegister, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ans workerapi.RegisterResponse
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ans) != nil {
		return "", fmt.Errorf("register: HTTP %d", resp.StatusCode)
	}
	return ans.Token, nil
}

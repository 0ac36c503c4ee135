package capacity_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

func TestLocalGuardCapsPerCluster(t *testing.T) {
	g := capacity.NewLocalGuard()
	ctx := context.Background()
	a1, err1 := g.Acquire(ctx, "a", 2)
	_, err2 := g.Acquire(ctx, "a", 2)
	_, err3 := g.Acquire(ctx, "a", 2)
	_, errB := g.Acquire(ctx, "b", 1)
	if err1 != nil || err2 != nil || !errors.Is(err3, capacity.ErrAtCapacity) || errB != nil {
		t.Fatalf("acquires: %v %v %v %v", err1, err2, err3, errB)
	}
	a1.Release()
	if _, err := g.Acquire(ctx, "a", 2); err != nil || g.Running("a") != 2 {
		t.Fatalf("after a release: %v, running %d", err, g.Running("a"))
	}
	if _, err := g.Acquire(ctx, "z", 0); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("cap 0: %v", err)
	}
	v := invariants.Catch(a1.Release)
	if v == nil || v.Message != `capacity slot on a closed twice` {
		t.Fatalf("double release: Catch = %v, want a violation naming cluster a", v)
	}
	if g.Running("a") != 2 {
		t.Fatalf("the second release gave the slot back again: running %d", g.Running("a"))
	}
}

// countingClient counts the calls a LeaseGuard makes.
type countingClient struct {
	capacity.LeaseClient
	renews, batches, refs int
}

func (c *countingClient) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	c.renews++
	return c.LeaseClient.Renew(ctx, ref, ttl, now)
}

func (c *countingClient) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	c.batches++
	c.refs += len(refs)
	return c.LeaseClient.ReleaseBatch(ctx, refs)
}

// holdFive starts a lease guard on n (leases of 3 s) and takes five slots of cluster c, its cap.
func holdFive(n *sim.Node, client capacity.LeaseClient) (*capacity.LeaseGuard, []capacity.Slot) {
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "cp",
		LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	g.Start(n.Ctx())
	var slots []capacity.Slot
	for range 5 {
		slot, err := g.Acquire(n.Ctx(), "c", 5)
		if err != nil {
			panic(err)
		}
		slots = append(slots, slot)
	}
	return g, slots
}

// TestLeaseGuardRenewsAndBatchesReleases: leases held for ten TTLs stay valid (renewed on
// time, never fenced), and five slots released together go out as one release batch.
func TestLeaseGuardRenewsAndBatchesReleases(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 3})
	n := s.AddNode("cp", nil)
	store := capacity.NewMemory()
	client := &countingClient{LeaseClient: store}
	var g *capacity.LeaseGuard
	var slots []capacity.Slot
	s.Spawn(n, "test", func() {
		g, slots = holdFive(n, client)
		if _, err := g.Acquire(n.Ctx(), "c", 5); !errors.Is(err, capacity.ErrAtCapacity) {
			panic("sixth acquire at cap 5: " + errString(err))
		}
	})
	var listedAt30 int
	s.At(30*time.Second, func() {
		ls, _ := store.List(context.Background(), "c")
		listedAt30 = len(ls)
		for _, sl := range slots {
			if sl.Lost() {
				t.Error("a renewed lease was fenced")
			}
			sl.Release()
		}
	})
	if err := s.Run(31 * time.Second); err != nil {
		t.Fatal(err)
	}
	if listedAt30 != 5 || client.renews < 5*9 {
		t.Fatalf("after 30s: %d leases held, %d renewals; want 5 and >= 45", listedAt30, client.renews)
	}
	ls, _ := store.List(context.Background(), "c")
	if len(ls) != 0 || client.batches != 1 || client.refs != 5 || g.PendingReleases() != 0 {
		t.Fatalf("after releasing: %d leases left, %d batches with %d refs", len(ls), client.batches, client.refs)
	}
}

// batchingClient is a countingClient that renews in batches, as Remote does.
type batchingClient struct {
	countingClient
	renewBatches int
}

func (c *batchingClient) RenewBatch(ctx context.Context, refs []capacity.LeaseRef, ttl time.Duration, now time.Time) ([]capacity.Renewed, error) {
	c.renewBatches++
	out := make([]capacity.Renewed, len(refs))
	for i, ref := range refs {
		out[i].Lease, out[i].Err = c.Renew(ctx, ref, ttl, now)
	}
	return out, nil
}

// TestLeaseGuardBatchesRenewals: five leases held together for ten TTLs are renewed in one
// round trip per renewal round, not one per lease, and stay valid.
func TestLeaseGuardBatchesRenewals(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 3})
	n := s.AddNode("cp", nil)
	store := capacity.NewMemory()
	client := &batchingClient{countingClient: countingClient{LeaseClient: store}}
	var slots []capacity.Slot
	s.Spawn(n, "test", func() { _, slots = holdFive(n, client) })
	s.At(30*time.Second, func() {
		for _, sl := range slots {
			if sl.Lost() {
				t.Error("a renewed lease was fenced")
			}
		}
	})
	if err := s.Run(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if client.renews < 5*9 || client.renewBatches*5 != client.renews {
		t.Fatalf("%d renewals in %d round trips, want at least 45 in batches of 5", client.renews, client.renewBatches)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestAPIAnswers: the HTTP API's statuses, read back through Remote's error mapping.
func TestAPIAnswers(t *testing.T) {
	store := capacity.NewMemory()
	e := env.Real(nil)
	srv := httptest.NewServer(capacity.NewAPIHandler(store, store, e, nil))
	defer srv.Close()
	r := capacity.NewRemote(srv.URL, srv.Client(), nil)
	ctx := context.Background()
	l, err := r.Acquire(ctx, "c", "w1", 1, time.Minute, time.Time{})
	if err != nil || l.Holder != "w1" || l.Generation != 1 {
		t.Fatalf("acquire: %+v %v", l, err)
	}
	if _, err := r.Acquire(ctx, "c", "w2", 1, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("denial: %v", err)
	}
	if _, err := r.Renew(ctx, capacity.LeaseRef{ID: "c#9", Generation: 9}, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("stale renew: %v", err)
	}
	if _, err := r.Renew(ctx, capacity.LeaseRef{ID: l.ID, Generation: 9}, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrInvalid) || !strings.Contains(err.Error(), "of that generation") {
		t.Fatalf("renew of a ref whose id and generation disagree: %v", err)
	}
	if _, err := r.Acquire(ctx, "", "w1", 1, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrInvalid) || !strings.Contains(err.Error(), "cluster is empty") {
		t.Fatalf("empty cluster: %v", err)
	}
	if n, err := r.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref(), l.Ref()}); err != nil || n != 1 {
		t.Fatalf("release batch: %d %v", n, err)
	}
	l2, err := r.Acquire(ctx, "c", "w2", 1, time.Minute, time.Time{}) // w2 waits, ranked ahead of w1
	if err != nil {
		t.Fatal(err)
	}
	checkRenewals(t, r, l2)
	// A control plane that predates renew-batch: Remote renews one by one.
	old := http.NewServeMux()
	old.Handle("POST "+capacity.PathRenew, capacity.NewAPIHandler(store, store, e, nil))
	oldSrv := httptest.NewServer(old)
	defer oldSrv.Close()
	checkRenewals(t, capacity.NewRemote(oldSrv.URL, oldSrv.Client(), nil), l2)
	if _, err := r.AcquireSweepLock(ctx, "s", "cp1", time.Minute, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AcquireSweepLock(ctx, "s", "cp2", time.Minute, time.Time{}); !errors.Is(err, capacity.ErrLockHeld) {
		t.Fatalf("held lock: %v", err)
	}
	resp, err := srv.Client().Post(srv.URL+capacity.PathAcquire, "text/plain", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("wrong media type: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	resp, err = srv.Client().Post(srv.URL+capacity.PathAcquire, capacity.MediaJSON, strings.NewReader(`{"cluster":"c","bogus":1}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown field: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	down := capacity.NewRemote("http://127.0.0.1:1", srv.Client(), nil)
	if _, err := down.Acquire(ctx, "c", "w1", 1, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrUnavailable) {
		t.Fatalf("unreachable: %v", err)
	}
}

// checkRenewals renews, in one batch through r, l (held), a stale lease and a ref whose id and
// generation disagree, and fails the test unless each gets its own answer.
func checkRenewals(t *testing.T, r *capacity.Remote, l capacity.Lease) {
	t.Helper()
	got, err := r.RenewBatch(context.Background(), []capacity.LeaseRef{l.Ref(), {ID: "c#1", Generation: 1}, {ID: "c#1", Generation: 2}}, time.Minute, time.Time{})
	if err != nil || len(got) != 3 {
		t.Fatalf("renew batch: %+v %v", got, err)
	}
	if got[0].Err != nil || got[0].Lease.ID != l.ID || !errors.Is(got[1].Err, capacity.ErrStaleGeneration) || !errors.Is(got[2].Err, capacity.ErrInvalid) {
		t.Fatalf("renew batch answers: %+v", got)
	}
}

// TestOrderedQueueGrantsInArrivalOrder: with the ordered queue, acquires that wait are granted
// in the order they arrived as slots free, and an acquire that will not wait is denied while
// others wait even when a slot is free for an instant.
func TestOrderedQueueGrantsInArrivalOrder(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
	store := capacity.NewMemory()
	var api *capacity.API
	s.AddNode("cp", func(n *sim.Node) http.Handler {
		api = capacity.NewAPI(store, store, n.Env(), nil).Ordered()
		return serveAPIAs(api, "")
	})
	var order []string
	var first capacity.Lease
	holder := s.AddNode("w0", nil)
	s.Spawn(holder, "hold", func() {
		var err error
		first, err = capacity.NewRemote("http://cp", holder.Client(), nil).Acquire(holder.Ctx(), "c", "w0", 1, time.Minute, time.Time{})
		if err != nil {
			panic(err)
		}
	})
	for i, name := range []string{"w3", "w1", "w2"} { // arrive in this order
		n := s.AddNode(name, nil)
		s.At(time.Duration(100+10*i)*time.Millisecond, func() {
			s.Spawn(n, "wait", func() {
				r := capacity.NewRemote("http://cp", n.Client(), nil).WithAcquireWait(30 * time.Second)
				l, err := r.Acquire(n.Ctx(), "c", name, 1, time.Minute, time.Time{})
				if err != nil {
					panic(name + ": " + err.Error())
				}
				order = append(order, name)
				_ = n.Env().Sleep(n.Ctx(), time.Second) // run the query, then free the slot
				if _, err := r.ReleaseBatch(n.Ctx(), []capacity.LeaseRef{l.Ref()}); err != nil {
					panic(err)
				}
			})
		})
	}
	var impatient error
	s.At(time.Second, func() {
		s.Spawn(holder, "release-and-jump", func() {
			r := capacity.NewRemote("http://cp", holder.Client(), nil)
			if _, err := r.ReleaseBatch(holder.Ctx(), []capacity.LeaseRef{first.Ref()}); err != nil {
				panic(err)
			}
			_, impatient = r.Acquire(holder.Ctx(), "c", "w0", 1, time.Minute, time.Time{})
		})
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "w3,w1,w2" {
		t.Fatalf("granted in order %v, want w3,w1,w2 (arrival)", order)
	}
	if !errors.Is(impatient, capacity.ErrAtCapacity) {
		t.Fatalf("a non-waiting acquire while others wait: %v, want ErrAtCapacity", impatient)
	}
}

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestCapacityAPIBehindWorkerAuth: the mounted capacity API names the authenticated worker as
// the holder whatever the body claims, refuses unauthenticated calls, answers a stale renewal
// with 409, and reclaims an evicted worker's expired leases in the sweeper's next round.
func TestCapacityAPIBehindWorkerAuth(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := capacity.NewMemory()
	sw := MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	a, b := h.register("a"), h.register("b")

	acquire := func(token string) (int, capacity.AcquireResponse) {
		code, body := h.do("POST", capacity.PathAcquire, token, capacity.MediaJSON,
			`{"cluster":"c1","cap":2,"ttlMillis":30000,"holder":"someone-else"}`)
		var resp capacity.AcquireResponse
		if code == 200 {
			if err := json.Unmarshal(body, &resp); err != nil {
				t.Fatal(err)
			}
		}
		return code, resp
	}
	if code, _ := acquire(""); code != 401 {
		t.Fatalf("unauthenticated acquire: %d, want 401", code)
	}
	code, got := acquire(b)
	if code != 200 || !got.Granted || capacity.HolderWorker(got.Lease.Holder) != "b" {
		t.Fatalf("acquire as b: %d %+v", code, got)
	}
	if _, got := acquire(a); !got.Granted {
		t.Fatal("second acquire at cap 2 denied")
	}
	if _, got := acquire(a); got.Granted {
		t.Fatal("third acquire at cap 2 granted")
	}
	madeUp := `{"lease":{"id":"c1#7","generation":7},"ttlMillis":30000}`
	if code, body := h.do("POST", capacity.PathRenew, a, capacity.MediaJSON, madeUp); code != 403 || !strings.Contains(string(body), "never granted") {
		t.Fatalf("renew of a lease never granted: %d %s, want 403", code, body)
	}
	// b goes silent; a keeps beating and renewing. Once b is evicted its (expired) lease is gone.
	ctx := context.Background()
	var aLease *capacity.Lease
	leases, _ := store.List(ctx, "c1")
	for _, l := range leases {
		if capacity.HolderWorker(l.Holder) == "a" {
			aLease = &l
		}
	}
	for i := range 10 {
		h.cp.Tick(ctx, h.e.Advance(10*time.Second))
		h.beat(a, i+1)
		renew := fmt.Sprintf(`{"lease":{"id":%q,"generation":%d},"ttlMillis":30000}`, aLease.ID, aLease.Generation)
		if code, body := h.do("POST", capacity.PathRenew, a, capacity.MediaJSON, renew); code != 200 {
			t.Fatalf("a's renew: %d %s", code, body)
		}
	}
	if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	leases, _ = store.List(ctx, "c1")
	if len(leases) != 1 || capacity.HolderWorker(leases[0].Holder) != "a" {
		t.Fatalf("after b's eviction: %+v", leases)
	}
}

// Without an engine fence, an eviction must not free a lease that has not expired: the evicted
// worker may still run the query it covers until it fences itself (TTL minus the drift margin).
func TestEvictionKeepsUnexpiredLeasesUntilTheyExpire(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := capacity.NewMemory()
	MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	b := h.register("b")
	code, body := h.do("POST", capacity.PathAcquire, b, capacity.MediaJSON, `{"cluster":"c1","cap":1,"ttlMillis":600000}`)
	if code != 200 {
		t.Fatalf("acquire: %d %s", code, body)
	}
	ctx := context.Background()
	for range 12 { // 120 s of silence: b is evicted long before its 10-minute lease expires
		h.cp.Tick(ctx, h.e.Advance(10*time.Second))
	}
	if w := h.state("b"); w.State != "evicted" {
		t.Fatalf("b not evicted after 120 s of silence: %+v", w)
	}
	if leases, _ := store.List(ctx, "c1"); len(leases) != 1 {
		t.Fatalf("b's unexpired lease was freed at eviction: %+v", leases)
	}
	sw := &capacity.Sweeper{Env: h.e, Store: store, Locks: store, Owner: "cp1"}
	h.e.Advance(10 * time.Minute)
	swept, err := sw.SweepOnce(ctx, time.Minute)
	if err != nil || len(swept) != 1 {
		t.Fatalf("the expired lease was not reclaimed: %+v %v", swept, err)
	}
}

// TestWorkerCannotTakeTheSweepLock: the sweep lock is the control-plane replicas' own. A worker
// (any holder of the worker secret) asking for it through the worker API, with the sweeper's
// lock name and a day's TTL, is not served; the replica's sweeper still frees an evicted
// worker's expired lease in its next round. Were the endpoint mounted, the worker would hold
// the lock and every sweep would stop: expired leases never freed, their slots lost.
func TestWorkerCannotTakeTheSweepLock(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := capacity.NewMemory()
	sw := MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	a, b := h.register("a"), h.register("b")
	if code, body := h.do("POST", capacity.PathAcquire, b, capacity.MediaJSON, `{"cluster":"c1","cap":1,"ttlMillis":30000}`); code != 200 {
		t.Fatalf("b's acquire: %d %s", code, body)
	}
	take := fmt.Sprintf(`{"name":%q,"owner":"cp1","ttlMillis":86400000}`, capacity.SweepLockName)
	for _, path := range []string{capacity.PathSweepLockRelease, capacity.PathSweepLockAcquire} {
		if code, body := h.do("POST", path, a, capacity.MediaJSON, take); code != 404 && code != 405 {
			t.Errorf("a worker's POST %s: %d %s, want it not served", path, code, body)
		}
	}
	ctx := context.Background()
	for i := range 12 { // b goes silent and is evicted; a keeps beating
		h.cp.Tick(ctx, h.e.Advance(10*time.Second))
		h.beat(a, i+1)
	}
	if freed, err := sw.SweepOnce(ctx, time.Minute); err != nil {
		t.Fatalf("the sweep after b's eviction: freed %+v, %v; want b's lease freed", freed, err)
	}
	if code, body := h.do("POST", capacity.PathAcquire, a, capacity.MediaJSON, `{"cluster":"c1","cap":1,"ttlMillis":30000}`); code != 200 || !strings.Contains(string(body), `"granted":true`) {
		t.Fatalf("a's acquire of the freed slot: %d %s", code, body)
	}
}

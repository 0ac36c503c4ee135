package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/queryflux/queryflux/internal/capacity"
)

// recordingFence is an engine fence that confirms (or not) and remembers what it was asked.
type recordingFence struct {
	done  bool
	asked []string
}

func (f *recordingFence) Fence(ctx context.Context, cluster string, refs []capacity.LeaseRef) (bool, error) {
	for _, r := range refs {
		f.asked = append(f.asked, r.ID)
	}
	return f.done, nil
}

// authority is a control plane with one configured cluster, c1: cap 2, lease TTL ttl.
func authority(t *testing.T, ttl time.Duration, fence capacity.EngineFence) (*harness, *capacity.Memory, *capacity.Sweeper, *capacity.Metrics) {
	h := newHarness(t, nil, nil)
	store := capacity.NewMemory()
	metrics := capacity.NewMetrics(nil)
	limits := func(cluster string) (int, time.Duration, bool) { return 2, ttl, cluster == "c1" }
	sw := MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1", Metrics: metrics,
		Limits: limits, Fence: fence})
	return h, store, sw, metrics
}

func (h *harness) acquireLease(token, body string) (int, capacity.AcquireResponse, string) {
	code, raw := h.do("POST", capacity.PathAcquire, token, capacity.MediaJSON, body)
	var resp capacity.AcquireResponse
	if code == 200 {
		if err := json.Unmarshal(raw, &resp); err != nil {
			h.t.Fatal(err)
		}
	}
	return code, resp, string(raw)
}

// TestControlPlaneIsTheLeaseAuthority: a registered worker cannot raise the cap or the TTL of
// the control plane's configuration, cannot acquire an unknown cluster, and gets 403 (counted)
// for renewing or releasing another worker's lease, which stays held.
func TestControlPlaneIsTheLeaseAuthority(t *testing.T) {
	h, store, _, metrics := authority(t, 30*time.Second, nil)
	good, rogue := h.register("good"), h.register("rogue")
	ctx := context.Background()

	code, got, raw := h.acquireLease(good, `{"cluster":"c1","cap":2,"ttlMillis":30000}`)
	if code != 200 || !got.Granted || got.Lease.TTLMillis != 30000 {
		t.Fatalf("good's acquire: %d %s", code, raw)
	}
	victim := got.Lease
	code, got, raw = h.acquireLease(rogue, `{"cluster":"c1","cap":100000,"ttlMillis":86400000}`)
	if code != 200 || !got.Granted || got.Lease.TTLMillis != 30000 || !got.Lease.ExpiresAt.Equal(h.e.Now().Add(30*time.Second)) {
		t.Fatalf("rogue's acquire asking a 24 h TTL: %d %s, want granted for the configured 30 s", code, raw)
	}
	if _, got, raw = h.acquireLease(rogue, `{"cluster":"c1","cap":100000}`); got.Granted {
		t.Fatalf("an acquire over the configured cap 2 with cap 100000 was granted: %s", raw)
	}
	if code, _, raw = h.acquireLease(rogue, `{"cluster":"nowhere","cap":1}`); code != 400 || !strings.Contains(raw, `unknown cluster \"nowhere\"`) {
		t.Fatalf("acquire of an unknown cluster: %d %s, want 400 naming it", code, raw)
	}

	ref := fmt.Sprintf(`{"id":%q,"generation":%d}`, victim.ID, victim.Generation)
	if code, raw := h.do("POST", capacity.PathRenew, rogue, capacity.MediaJSON, `{"lease":`+ref+`,"ttlMillis":30000}`); code != 403 {
		t.Fatalf("rogue renewing good's lease: %d %s, want 403", code, raw)
	}
	if code, raw := h.do("POST", capacity.PathReleaseBatch, rogue, capacity.MediaJSON, `{"leases":[`+ref+`]}`); code != 403 {
		t.Fatalf("rogue releasing good's lease: %d %s, want 403", code, raw)
	}
	// Releases carried on an acquire: the whole call is refused.
	if code, _, raw := h.acquireLease(rogue, `{"cluster":"c1","release":[`+ref+`]}`); code != 403 {
		t.Fatalf("rogue releasing good's lease on an acquire: %d %s, want 403", code, raw)
	}
	if ls, _ := store.List(ctx, "c1"); len(ls) != 2 || ls[0].ID != victim.ID {
		t.Fatalf("leases after the rogue's attempts: %+v, want good's still held", ls)
	}
	for _, op := range []string{"renew", "release"} {
		if n := counterValue(t, metrics.Refused.WithLabelValues(op, "not-holder")); n < map[string]float64{"renew": 1, "release": 2}[op] {
			t.Fatalf("refused %s not counted", op)
		}
	}
	if code, raw := h.do("POST", capacity.PathRenew, good, capacity.MediaJSON, `{"lease":`+ref+`,"ttlMillis":30000}`); code != 200 {
		t.Fatalf("good renewing its own lease: %d %s", code, raw)
	}
}

// TestRevokedLeaseIsFencedThenFreed: an operator revokes a lease through the admin API; the
// holder can no longer renew it, and the sweeper frees it once the engine fence confirms.
// While the fence cannot confirm, the slot stays held until the grace is over.
func TestRevokedLeaseIsFencedThenFreed(t *testing.T) {
	fence := &recordingFence{}
	h, store, sw, _ := authority(t, 30*time.Second, fence)
	w := h.register("w")
	ctx := context.Background()
	_, got, _ := h.acquireLease(w, `{"cluster":"c1"}`)
	if code, raw := h.do("POST", PathAdminLeaseRevoke, adminToken, capacity.MediaJSON, `{"lease":"`+got.Lease.ID+`"}`); code != 200 {
		t.Fatalf("admin revoke: %d %s", code, raw)
	}
	if code, raw := h.do("POST", PathAdminLeaseRevoke, adminToken, capacity.MediaJSON, `{"lease":"c1"}`); code != 400 {
		t.Fatalf("admin revoke of a malformed lease: %d %s, want 400", code, raw)
	}
	ref := fmt.Sprintf(`{"id":%q,"generation":%d}`, got.Lease.ID, got.Lease.Generation)
	if code, _ := h.do("POST", capacity.PathRenew, w, capacity.MediaJSON, `{"lease":`+ref+`,"ttlMillis":30000}`); code != 409 {
		t.Fatalf("renewing a revoked lease: %d, want 409", code)
	}
	if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ls, _ := store.List(ctx, "c1"); len(ls) != 1 || len(fence.asked) != 1 {
		t.Fatalf("an unconfirmed fence freed the slot at once: leases %+v, fence asked %v", ls, fence.asked)
	}
	h.e.Advance(capacity.FenceGraceDefault)
	if freed, _ := sw.SweepOnce(ctx, time.Minute); len(freed) != 1 {
		t.Fatalf("the slot was not freed after the fence grace: %+v", freed)
	}
	code, raw := h.do("GET", PathAdminLeases+"?cluster=c1", adminToken, "", "")
	if code != 200 || strings.TrimSpace(string(raw)) != "[]" {
		t.Fatalf("admin list after the reclaim: %d %s", code, raw)
	}
}

// TestEvictionFencesThenFrees: an evicted worker's unexpired leases are fenced on the engine at
// once, but keep their slots until they expire: a worker that is alive but silent may start
// another query under a lease whose term it still counts on, after that fence (found by
// TestLeaseCapsUnderRapidFaults: a starved worker). At their expiry they are fenced again, then
// freed.
func TestEvictionFencesThenFrees(t *testing.T) {
	fence := &recordingFence{done: true}
	h, store, sw, _ := authority(t, 5*time.Minute, fence)
	b := h.register("b")
	ctx := context.Background()
	_, got, raw := h.acquireLease(b, `{"cluster":"c1"}`)
	if !got.Granted {
		t.Fatal(raw)
	}
	for h.state("b").State != "evicted" {
		h.cp.Tick(ctx, h.e.Advance(10*time.Second))
	}
	if !h.e.Now().Before(got.Lease.ExpiresAt) {
		t.Fatalf("the lease expired (%s) before the eviction (%s): nothing left to test", got.Lease.ExpiresAt, h.e.Now())
	}
	if freed, _ := sw.SweepOnce(ctx, time.Minute); len(freed) != 0 || len(fence.asked) != 1 {
		t.Fatalf("eviction's reclaim before the lease's expiry: freed %+v, fence asked %v", freed, fence.asked)
	}
	if ls, _ := store.List(ctx, ""); len(ls) != 1 || !ls[0].Revoked {
		t.Fatalf("leases before the expiry: %+v, want the one, revoked", ls)
	}
	h.e.Advance(got.Lease.ExpiresAt.Sub(h.e.Now()))
	if freed, _ := sw.SweepOnce(ctx, time.Minute); len(freed) != 1 || len(fence.asked) != 2 {
		t.Fatalf("eviction's reclaim at the lease's expiry: freed %+v, fence asked %v", freed, fence.asked)
	}
	if ls, _ := store.List(ctx, ""); len(ls) != 0 {
		t.Fatalf("leases left: %+v", ls)
	}
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

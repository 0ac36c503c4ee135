package controlplane

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
)

func (h *harness) capacityStats(query string) CapacityStats {
	h.t.Helper()
	code, raw := h.do("GET", PathAdminCapacityStats+query, adminToken, "", "")
	var st CapacityStats
	if code != 200 || json.Unmarshal(raw, &st) != nil {
		h.t.Fatalf("GET %s: %d %s", PathAdminCapacityStats, code, raw)
	}
	return st
}

// TestCapacityStats: the stats count grants and denials per cluster and worker as the acquire
// endpoint answers them, list each held lease with its holder and grant time, follow a revoke
// until the sweeper has fenced it and freed it at its expiry, and keep one sample per call without a
// sampler. Clusters the control plane does not know are not followed.
func TestCapacityStats(t *testing.T) {
	fence := &recordingFence{done: true}
	h, _, sw, _ := authority(t, 30*time.Second, fence)
	if code, _ := h.do("GET", PathAdminCapacityStats, "", "", ""); code != 401 {
		t.Fatalf("stats without the admin token: %d, want 401", code)
	}
	a, b := h.register("a"), h.register("b")
	granted := h.e.Now()
	var first, second capacity.Lease
	for i := range 2 {
		if _, got, raw := h.acquireLease(a, `{"cluster":"c1","cap":2,"ttlMillis":30000}`); !got.Granted {
			t.Fatalf("acquire %d: %s", i, raw)
		} else if i == 0 {
			first = *got.Lease
		} else {
			second = *got.Lease
		}
	}
	h.e.Advance(3 * time.Second)
	if _, got, _ := h.acquireLease(b, `{"cluster":"c1","cap":2,"ttlMillis":30000}`); got.Granted {
		t.Fatal("third acquire at cap 2 granted")
	}
	if code, _, _ := h.acquireLease(b, `{"cluster":"nope","cap":2,"ttlMillis":30000}`); code == 200 {
		t.Fatal("an unknown cluster was granted")
	}

	st := h.capacityStats("")
	if len(st.Clusters) != 1 || st.Clusters[0].Cluster != "c1" || st.EveryMillis != 0 {
		t.Fatalf("stats: %+v, want c1 only", st)
	}
	c1 := st.Clusters[0]
	now := c1.Now
	if c1.Cap != 2 || now.Held != 2 || now.Granted != 2 || now.Denied != 1 || now.Waiting != 0 || len(c1.Samples) != 1 {
		t.Fatalf("c1: %+v", c1)
	}
	if len(c1.Workers) != 2 || c1.Workers[0] != (WorkerShare{Worker: "a", Weight: 1, Held: 2, Granted: 2}) ||
		c1.Workers[1] != (WorkerShare{Worker: "b", Weight: 1, Denied: 1}) {
		t.Fatalf("workers: %+v", c1.Workers)
	}
	if now.Fairness == nil || *now.Fairness != 0.5 { // a got both grants, b none: (2+0)²/(2·(4+0))
		t.Fatalf("fairness %v, want 0.5", now.Fairness)
	}
	if now.WaitP99Millis == nil || *now.WaitP99Millis != 0 { // the manual clock did not move while serving
		t.Fatalf("p99 wait %v, want 0", now.WaitP99Millis)
	}
	if len(c1.Leases) != 2 || c1.Leases[0].ID != first.ID || capacity.HolderWorker(c1.Leases[0].Holder) != "a" || !c1.Leases[0].Since.Equal(granted) {
		t.Fatalf("leases: %+v, want %s held by a since %s", c1.Leases, first.ID, granted)
	}

	// An operator revokes a lease; the sweeper fences it on the engine at once, and frees it
	// at its expiry (its holder may count on it until then), while the other lease, renewed,
	// stays held.
	if code, raw := h.do("POST", capacity.PathRenew, a, capacity.MediaJSON, `{"lease":`+refJSON(second)+`,"ttlMillis":30000}`); code != 200 {
		t.Fatalf("renewing the second lease: %d %s", code, raw)
	}
	if code, raw := h.do("POST", PathAdminLeaseRevoke, adminToken, capacity.MediaJSON, `{"lease":"`+first.ID+`"}`); code != 200 {
		t.Fatalf("revoke: %d %s", code, raw)
	}
	h.e.Advance(time.Second)
	if c1 = h.capacityStats("?cluster=c1").Clusters[0]; c1.Now.Revoked != 1 || c1.Now.Held != 2 || c1.Now.Fenced != 0 {
		t.Fatalf("after the revoke: %+v", c1.Now)
	}
	if _, err := sw.SweepOnce(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if c1 = h.capacityStats("?cluster=c1").Clusters[0]; c1.Now.Revoked != 1 || c1.Now.Held != 2 || len(fence.asked) != 1 {
		t.Fatalf("after the sweep, before the revoked lease's expiry: %+v, fence asked %v", c1.Now, fence.asked)
	}
	h.e.Advance(first.ExpiresAt.Sub(h.e.Now()))
	if _, err := sw.SweepOnce(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	h.e.Advance(time.Second)
	c1 = h.capacityStats("?cluster=c1").Clusters[0]
	if c1.Now.Held != 1 || c1.Now.Revoked != 0 || c1.Now.Fenced != 1 || c1.Now.Reclaimed != 1 || len(c1.Leases) != 1 || len(c1.Samples) != 4 {
		t.Fatalf("after the sweep at its expiry: %+v", c1)
	}
	if held := [4]int{c1.Samples[0].Held, c1.Samples[1].Held, c1.Samples[2].Held, c1.Samples[3].Held}; held != [4]int{2, 2, 2, 1} {
		t.Fatalf("held over time: %v, want [2 2 2 1]", held)
	}
	// The window keeps the grants, denials and waits a minute, then lets them go.
	if c1.Now.WaitP99Millis == nil || c1.Workers[0].Granted != 2 || c1.Workers[1].Denied != 1 {
		t.Fatalf("window: %+v", c1)
	}
	for range statsWindow - 4 {
		h.capacityStats("")
	}
	c1 = h.capacityStats("").Clusters[0]
	if c1.Now.WaitP99Millis != nil || c1.Now.Fairness != nil || len(c1.Workers) != 1 || c1.Workers[0] != (WorkerShare{Worker: "a", Weight: 1, Held: 1}) ||
		c1.Now.Granted != 2 || c1.Now.Denied != 1 {
		t.Fatalf("past the window: %+v", c1)
	}
	if got := h.capacityStats("?cluster=other").Clusters; len(got) != 0 {
		t.Fatalf("?cluster=other: %+v", got)
	}
}

// Jain's index is 1 exactly when every asking worker has the same weighted share, lies in
// [1/n, 1] for n asking workers, is absent when none was granted anything, and leaves out
// workers that asked for nothing.
func TestJainIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "workers")
		ws := []WorkerShare{{Worker: "idle", Weight: 1, Held: 3}} // asked nothing
		var shares []float64
		for i := range n {
			w := WorkerShare{Worker: string(rune('a' + i)), Weight: rapid.IntRange(1, 5).Draw(t, "weight"),
				Granted: uint64(rapid.IntRange(0, 20).Draw(t, "granted")), Denied: uint64(rapid.IntRange(0, 3).Draw(t, "denied"))}
			ws = append(ws, w)
			if w.Granted+w.Denied > 0 {
				shares = append(shares, float64(w.Granted)/float64(w.Weight))
			}
		}
		j := jain(ws)
		if slices.Max(append([]float64{0}, shares...)) == 0 {
			if j != nil {
				t.Fatalf("index %v with no grants", *j)
			}
			return
		}
		if j == nil {
			t.Fatalf("no index for %+v", ws)
		}
		equal := slices.Min(shares) == slices.Max(shares)
		if *j < 1/float64(len(shares))-1e-9 || *j > 1+1e-9 || equal != (math.Abs(*j-1) < 1e-9) {
			t.Fatalf("index %v (equal shares: %v) for %+v", *j, equal, ws)
		}
	})
}

package controlplane

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// tagFence is an engine fence that keeps the tags it was asked to stop and confirms.
type tagFence struct{ tags []string }

func (f *tagFence) Fence(_ context.Context, _ string, refs []capacity.LeaseRef) (bool, error) {
	f.tags = append(f.tags, capacity.FenceTags(refs)...)
	return true, nil
}

// TestLeasesCarryTheirFleet: two control planes on one lease store (replicas) grant leases
// carrying the one fleet id the store keeps, and so tag their work alike; a control plane of
// another fleet (another store) grants the same lease id, "c1#1", with another fleet id and so
// another tag. The sweeper fences a reclaimed lease under its fleet's tag (and the tag without
// it, which workers of an earlier release use).
func TestLeasesCarryTheirFleet(t *testing.T) {
	grant := func(h *harness, token string) capacity.Lease {
		t.Helper()
		code, body := h.do("POST", capacity.PathAcquire, token, capacity.MediaJSON, `{"cluster":"c1","cap":4,"ttlMillis":30000}`)
		var resp capacity.AcquireResponse
		if code != 200 || json.Unmarshal(body, &resp) != nil || !resp.Granted {
			t.Fatalf("acquire: %d %s", code, body)
		}
		return *resp.Lease
	}
	shared, other := capacity.NewMemory(), capacity.NewMemory()
	// The harnesses' random sources are seeded alike; another fleet's first control plane drew
	// another id.
	if _, err := other.FleetID(context.Background(), "fleet-b"); err != nil {
		t.Fatal(err)
	}
	fence := &tagFence{}
	h1, h2, h3 := newHarness(t, nil, nil), newHarness(t, nil, nil), newHarness(t, nil, nil)
	sw := MountCapacity(h1.e, h1.cp, CapacityConfig{Store: shared, Locks: shared, Owner: "cp1", Fence: fence})
	MountCapacity(h2.e, h2.cp, CapacityConfig{Store: shared, Locks: shared, Owner: "cp2"})
	MountCapacity(h3.e, h3.cp, CapacityConfig{Store: other, Locks: other, Owner: "cp3"})
	l1, l2, l3 := grant(h1, h1.register("w1")), grant(h2, h2.register("w2")), grant(h3, h3.register("w3"))
	kept, _ := shared.FleetID(context.Background(), "unused")
	if l1.Fleet == "" || l1.Fleet != kept || l2.Fleet != kept {
		t.Fatalf("replicas granted fleets %q and %q; the store keeps %q", l1.Fleet, l2.Fleet, kept)
	}
	if l3.ID != l1.ID || l3.Fleet == l1.Fleet || l3.Ref().Tag() == l1.Ref().Tag() {
		t.Fatalf("another fleet's lease %s has fleet %q and tag %q, the first's %s %q %q: want the same id and another tag",
			l3.ID, l3.Fleet, l3.Ref().Tag(), l1.ID, l1.Fleet, l1.Ref().Tag())
	}
	if !strings.Contains(l1.Ref().Tag(), l1.Fleet) || len(l1.Ref().Tag()) > 63 {
		t.Fatalf("tag %q: want the fleet %q in at most 63 bytes", l1.Ref().Tag(), l1.Fleet)
	}
	ctx := context.Background()
	if _, err := shared.Revoke(ctx, capacity.Selection{Refs: []capacity.LeaseRef{l1.Ref()}}, h1.e.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := l1.Ref().Tag() + "," + l1.Ref().LegacyTag(); strings.Join(fence.tags, ",") != want {
		t.Fatalf("the sweeper fenced %v, want %s", fence.tags, want)
	}
}

package capacity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// The in-memory store answers as the CapacityStore contract says, on its own (the API in front
// of it checks the cap first, so these answers are otherwise reached only in races): the cap
// denies, a release frees a slot, an expired, revoked or released lease is stale, and another
// holder's claim is refused and frees nothing.
func TestMemoryStoreAnswers(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := capacity.NewMemory()
	a, err := m.Acquire(ctx, "c", "w1", 2, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Acquire(ctx, "c", "w2", 2, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx, "c", "w3", 2, time.Minute, now); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("a third lease under cap 2: %v, want ErrAtCapacity", err)
	}
	if _, err := m.Renew(ctx, a.Ref().As("w2"), time.Minute, now); !errors.Is(err, capacity.ErrNotHolder) {
		t.Fatalf("w2 renewing w1's lease: %v, want ErrNotHolder", err)
	}
	if n, err := m.ReleaseBatch(ctx, []capacity.LeaseRef{a.Ref().As("w2")}); n != 0 || !errors.Is(err, capacity.ErrNotHolder) {
		t.Fatalf("w2 releasing w1's lease: %d released, %v; want 0, ErrNotHolder", n, err)
	}
	if err := m.Release(ctx, b.Ref().As("w1")); !errors.Is(err, capacity.ErrNotHolder) {
		t.Fatalf("w1 releasing w2's lease: %v, want ErrNotHolder", err)
	}
	if got := m.Count("c"); got != 2 {
		t.Fatalf("refused claims changed the count to %d", got)
	}
	renewed, err := m.Renew(ctx, a.Ref().As("w1"), 2*time.Minute, now.Add(30*time.Second))
	if err != nil || !renewed.ExpiresAt.Equal(now.Add(150*time.Second)) {
		t.Fatalf("renewal by its holder: %+v, %v; want it to expire 2 min after the renewal", renewed, err)
	}
	if _, err := m.Renew(ctx, b.Ref(), time.Minute, now.Add(time.Minute)); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("renewing a lease at its expiry: %v, want ErrStaleGeneration", err)
	}
	if err := m.Release(ctx, b.Ref().As("w2")); err != nil {
		t.Fatalf("w2 releasing its own lease: %v", err)
	}
	if err := m.Release(ctx, b.Ref().As("w2")); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("releasing it twice: %v, want ErrStaleGeneration", err)
	}
	if _, err := m.Acquire(ctx, "c", "w3", 2, time.Minute, now); err != nil {
		t.Fatalf("the released slot was not free: %v", err)
	}
	if _, err := m.Revoke(ctx, capacity.Selection{Refs: []capacity.LeaseRef{a.Ref()}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Renew(ctx, a.Ref().As("w1"), time.Minute, now); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("renewing a revoked lease: %v, want ErrStaleGeneration", err)
	}
	if got := m.Count("c"); got != 2 {
		t.Fatalf("a revoked lease stops counting before it is released: count %d, want 2", got)
	}
}

// Bad arguments are refused with ErrInvalid at each bound, before anything is granted, renewed
// or released; a lease's renewal is what the store keeps.
func TestMemoryStoreRefusesBadArguments(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := capacity.NewMemory()
	long := strings.Repeat("x", 257)
	acquires := []struct {
		cluster, holder string
		limit           int
		ttl             time.Duration
	}{
		{"", "w", 1, time.Second}, {long, "w", 1, time.Second}, {"c", "", 1, time.Second}, {"c", long, 1, time.Second},
		{"c", "w", 0, time.Second}, {"c", "w", 1<<20 + 1, time.Second}, {"c", "w", 1, time.Millisecond - 1}, {"c", "w", 1, 24*time.Hour + 1},
	}
	for _, a := range acquires {
		if _, err := m.Acquire(ctx, a.cluster, a.holder, a.limit, a.ttl, now); !errors.Is(err, capacity.ErrInvalid) {
			t.Errorf("Acquire(%.10q, %.10q, %d, %v): %v, want ErrInvalid", a.cluster, a.holder, a.limit, a.ttl, err)
		}
	}
	for _, ok := range []struct {
		name string
		len  int
		ttl  time.Duration
	}{{"names of 256 bytes, ttl 1ms", 256, time.Millisecond}, {"ttl 24h", 1, 24 * time.Hour}} {
		name := strings.Repeat("y", ok.len)
		if _, err := m.Acquire(ctx, name, name, 1<<20, ok.ttl, now); err != nil {
			t.Errorf("%s: %v", ok.name, err)
		}
	}
	l, err := m.Acquire(ctx, "c", "w", 1, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Renew(ctx, l.Ref(), 0, now); !errors.Is(err, capacity.ErrInvalid) {
		t.Errorf("renewal with ttl 0: %v, want ErrInvalid", err)
	}
	badRef := capacity.LeaseRef{ID: "c#1", Generation: 2}
	if _, err := m.Renew(ctx, badRef, time.Minute, now); !errors.Is(err, capacity.ErrInvalid) {
		t.Errorf("renewal of a malformed ref: %v, want ErrInvalid", err)
	}
	if err := m.Release(ctx, badRef); !errors.Is(err, capacity.ErrInvalid) {
		t.Errorf("release of a malformed ref: %v, want ErrInvalid", err)
	}
	if _, err := m.ReleaseBatch(ctx, make([]capacity.LeaseRef, 10001)); !errors.Is(err, capacity.ErrInvalid) {
		t.Errorf("a release batch of 10001 refs: %v, want ErrInvalid", err)
	}
	if err := m.Release(ctx, capacity.LeaseRef{ID: "never#1", Generation: 1}); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Errorf("release in a cluster never seen: %v, want ErrStaleGeneration", err)
	}
	made := capacity.LeaseRef{ID: "c#99", Generation: 99, Holder: "w"}
	if err := m.Release(ctx, made); !errors.Is(err, capacity.ErrNotHolder) {
		t.Errorf("release of a generation never granted: %v, want ErrNotHolder", err)
	}
	if _, err := m.Renew(ctx, l.Ref().As("w"), time.Hour, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	listed, _ := m.List(ctx, "c")
	if len(listed) != 1 || !listed[0].ExpiresAt.Equal(now.Add(time.Hour+30*time.Second)) {
		t.Fatalf("after a renewal the store holds %+v, want it expiring an hour after the renewal", listed)
	}
	if m.Count("c") != 1 {
		t.Fatal("a refused call changed the count")
	}
}

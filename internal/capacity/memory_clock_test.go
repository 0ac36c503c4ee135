package capacity_test

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestMemoryWithClockIgnoresSkewedCallers: a store shared by two control planes whose clocks
// are an hour apart stamps and sweeps with its own clock, so the fast one's sweep cannot
// shorten the slow one's lease, nor take over its sweep lock.
func TestMemoryWithClockIgnoresSkewedCallers(t *testing.T) {
	db := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := capacity.NewMemory().WithClock(func() time.Time { return db })
	ctx := context.Background()
	slow, fast := db.Add(-time.Hour), db.Add(time.Hour)
	l, err := m.Acquire(ctx, "c", "w", 1, time.Minute, slow)
	if err != nil || !l.ExpiresAt.Equal(db.Add(time.Minute)) {
		t.Fatalf("acquire stamped by a caller's clock: %+v %v", l, err)
	}
	if revoked, _ := m.Revoke(ctx, capacity.Selection{Expired: true}, fast); len(revoked) != 0 {
		t.Fatalf("the fast caller's sweep revoked %+v", revoked)
	}
	if _, err := m.AcquireSweepLock(ctx, "sweep", "slow", time.Minute, slow); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AcquireSweepLock(ctx, "sweep", "fast", time.Minute, fast); err == nil {
		t.Fatal("the fast caller took a held sweep lock")
	}
	db = db.Add(time.Minute)
	if revoked, _ := m.Revoke(ctx, capacity.Selection{Expired: true}, slow); len(revoked) != 1 {
		t.Fatalf("a lease past its expiry by the store's clock was not revoked: %+v", revoked)
	}
}

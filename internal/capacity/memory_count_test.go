package capacity_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestMemoryCountIsListLength: whatever was acquired, released and revoked, Count(cluster) is
// the length of List(cluster).
func TestMemoryCountIsListLength(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := capacity.NewMemory()
		ctx := context.Background()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clusters := []string{"c1", "c2"}
		var held []capacity.Lease
		for range rapid.IntRange(0, 40).Draw(t, "ops") {
			cluster := rapid.SampledFrom(clusters).Draw(t, "cluster")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				if l, err := m.Acquire(ctx, cluster, "w", 3, time.Second, now); err == nil {
					held = append(held, l)
				}
			case 2:
				if len(held) > 0 {
					i := rapid.IntRange(0, len(held)-1).Draw(t, "release")
					_ = m.Release(ctx, held[i].Ref())
					held = append(held[:i], held[i+1:]...)
				}
			case 3:
				now = now.Add(time.Duration(rapid.IntRange(0, 2000).Draw(t, "ms")) * time.Millisecond)
				_, _ = m.Revoke(ctx, capacity.Selection{Expired: true}, now)
			}
			for _, c := range append(clusters, "none") {
				listed, _ := m.List(ctx, c)
				if got := m.Count(c); got != len(listed) {
					t.Fatalf("Count(%s) = %d, List has %d", c, got, len(listed))
				}
			}
		}
	})
}

package pgcapacity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestStatsCountEachBatch: the batch counters the benchmarks report (batches, the operations in
// them, their summed round trips) count every capacity_apply call: three acquires and a
// release-batch of two, made one after another, are four batches of five operations.
func TestStatsCountEachBatch(t *testing.T) {
	s, _ := newStore(t, 4)
	ctx := context.Background()
	var refs []string
	for range 3 {
		l, err := s.Acquire(ctx, "c", "w1", 3, time.Minute, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, l.ID)
	}
	ls, err := s.List(ctx, "c")
	if err != nil || len(ls) != 3 {
		t.Fatalf("%d leases, %v", len(ls), err)
	}
	if n, err := s.ReleaseBatch(ctx, refsOf(ls[:2])); n != 2 || err != nil {
		t.Fatalf("released %d of %v: %v", n, refs[:2], err)
	}
	st := s.Stats()
	if st.Batches != 4 || st.Ops != 5 || st.BatchTotal <= 0 {
		t.Fatalf("stats %+v: want 4 batches of 5 operations in all, and their time", st)
	}
}

// TestUnreachableDatabaseIsAnError: with the database gone, an acquire is answered an error, not
// a denial (a worker retries a denial as a busy cluster, and counts no coordination failure) nor
// a crash of the control plane; releases and renewals likewise.
func TestUnreachableDatabaseIsAnError(t *testing.T) {
	s, pool := newStore(t, 4)
	ctx := context.Background()
	l, err := s.Acquire(ctx, "c", "w1", 1, time.Minute, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if _, err := s.Acquire(ctx, "c", "w2", 2, time.Minute, time.Time{}); err == nil || errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("acquire with the database gone: %v, want an error other than at capacity", err)
	}
	if n, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()}); err == nil {
		t.Fatalf("release with the database gone: %d released, no error", n)
	}
	if _, err := s.Renew(ctx, l.Ref(), time.Minute, time.Time{}); err == nil {
		t.Fatal("renewal with the database gone: no error")
	}
}

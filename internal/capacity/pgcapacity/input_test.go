package pgcapacity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestRenewalOfABadTermIsRefused: a renewal for no time or negative time is refused as invalid
// and leaves the lease's term as it was: the table never stamps a lease already expired, which
// the next sweep would free under its running holder.
func TestRenewalOfABadTermIsRefused(t *testing.T) {
	s, _ := newStore(t, 4)
	ctx := context.Background()
	l, err := s.Acquire(ctx, "c", "w1", 1, time.Minute, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, -time.Minute} {
		if _, err := s.Renew(ctx, l.Ref().As("w1"), ttl, time.Time{}); !errors.Is(err, capacity.ErrInvalid) {
			t.Errorf("renewal for %v: %v, want invalid", ttl, err)
		}
	}
	ls, err := s.List(ctx, "c")
	if err != nil || len(ls) != 1 || !ls[0].ExpiresAt.Equal(l.ExpiresAt) {
		t.Fatalf("after the refused renewals: %+v %v, want the lease expiring at %v", ls, err, l.ExpiresAt)
	}
}

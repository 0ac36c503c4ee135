package pgcapacity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
)

// TestConcurrentSendingsOfOneNamedAcquireShareALease: sendings of one named acquire (a worker's
// first try and its retries, sent before the first is decided) that reach the control plane
// at once, on one replica (one batch) or on two (two transactions), are granted one lease
// between them (migration 0015): every grant answers the same lease, at most one row keeps the
// name, and the cluster holds no more than its cap. Beside them other workers' acquires race
// for the same slots; a name whose lease was revoked before is granted a new one.
func TestConcurrentSendingsOfOneNamedAcquireShareALease(t *testing.T) {
	a, b, pool := twoReplicas(t)
	stores := []*pgcapacity.Store{a, b}
	ctx := context.Background()
	iter := 0
	rapid.Check(t, func(rt *rapid.T) {
		iter++
		cluster := fmt.Sprintf("c%d", iter)
		limit := rapid.IntRange(1, 4).Draw(rt, "cap")
		sendings := rapid.IntRange(2, 6).Draw(rt, "sendings")
		others := rapid.IntRange(0, 4).Draw(rt, "others")
		var revoked capacity.Lease
		if rapid.Bool().Draw(rt, "revoked-before") {
			l, err := a.AcquireNamed(ctx, cluster, "w", "r1", limit, time.Minute, time.Time{})
			if err != nil {
				rt.Fatal(err)
			}
			if _, err := b.Revoke(ctx, capacity.Selection{Refs: []capacity.LeaseRef{l.Ref()}}, time.Time{}); err != nil {
				rt.Fatal(err)
			}
			revoked = l
		}
		type answer struct {
			named bool
			l     capacity.Lease
			err   error
		}
		n := sendings + others
		on := make([]int, n)
		for i := range on {
			on[i] = rapid.IntRange(0, 1).Draw(rt, fmt.Sprintf("replica-%d", i))
		}
		answers := make([]answer, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s := stores[on[i]]
				if i < sendings {
					l, err := s.AcquireNamed(ctx, cluster, "w", "r1", limit, time.Minute, time.Time{})
					answers[i] = answer{true, l, err}
					return
				}
				l, err := s.AcquireNamed(ctx, cluster, fmt.Sprintf("o%d", i), fmt.Sprintf("r%d", i), limit, time.Minute, time.Time{})
				answers[i] = answer{false, l, err}
			}()
		}
		close(start)
		wg.Wait()
		var named string
		grants := map[string]bool{}
		for i, an := range answers {
			switch {
			case errors.Is(an.err, capacity.ErrAtCapacity):
				continue
			case an.err != nil:
				rt.Fatalf("acquire %d (named %v): %v", i, an.named, an.err)
			}
			grants[an.l.ID] = true
			if !an.named {
				continue
			}
			if an.l.ID == revoked.ID {
				rt.Fatalf("sending %d answered the revoked lease %s", i, revoked.ID)
			}
			if named != "" && an.l.ID != named {
				rt.Fatalf("one acquire granted two leases: %s and %s", named, an.l.ID)
			}
			named = an.l.ID
		}
		var rows, keep int
		if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE holder = 'w' AND request = 'r1')
			FROM capacity_leases WHERE cluster = $1`, cluster).Scan(&rows, &keep); err != nil {
			rt.Fatal(err)
		}
		want := len(grants)
		if revoked.ID != "" {
			want++
		}
		switch {
		case rows > limit:
			rt.Fatalf("%s holds %d leases, cap %d", cluster, rows, limit)
		case rows != want:
			rt.Fatalf("%s holds %d leases; %d granted (%v), revoked before: %q", cluster, rows, len(grants), grants, revoked.ID)
		case keep > 1 || (named != "") != (keep == 1):
			rt.Fatalf("%d leases keep the name; the sendings were answered %q", keep, named)
		}
		if named != "" {
			if l, ok, err := b.Named(ctx, cluster, "w", "r1"); err != nil || !ok || l.ID != named {
				rt.Fatalf("the name's lease: %+v %v %v, want %s", l, ok, err, named)
			}
		}
	})
}

package capacity_test

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// hangingReleases is a lease store whose releases hang until their deadline (a control plane
// that takes them and never answers); it counts renewals and release batches.
type hangingReleases struct {
	*capacity.Memory
	e                  env.Env
	renewals, releases *int
}

func (h hangingReleases) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	*h.renewals++
	return h.Memory.Renew(ctx, ref, ttl, now)
}

func (h hangingReleases) ReleaseBatch(ctx context.Context, _ []capacity.LeaseRef) (int, error) {
	*h.releases++
	_ = h.e.Sleep(ctx, time.Hour)
	return 0, ctx.Err()
}

// TestKeeperRenewsWhileAReleaseHangs: the guard's duties share one loop task, yet a release
// round trip that hangs for 30 s does not hold up the keeper: a lease held meanwhile is renewed
// every second (RenewEvery) and never lost, though it would be fenced 2.5 s after its last renewal.
func TestKeeperRenewsWhileAReleaseHangs(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("w", nil)
	renewals, releases := 0, 0
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{
		Env: n.Env(), Client: hangingReleases{capacity.NewMemory(), n.Env(), &renewals, &releases}, Holder: "w",
		LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond, AcquireTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(n.Ctx())
	var held capacity.Slot
	s.Spawn(n, "queries", func() {
		first, err := g.Acquire(n.Ctx(), "c", 2)
		if err != nil {
			panic(err)
		}
		if held, err = g.Acquire(n.Ctx(), "c", 2); err != nil {
			panic(err)
		}
		first.Release() // its release hangs from now on
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if held == nil || held.Lost() {
		t.Fatal("the lease held while a release hung was lost: the keeper did not renew it in time")
	}
	if renewals < 8 {
		t.Fatalf("%d renewals in 10 s, want about one a second", renewals)
	}
	if releases != 1 {
		t.Fatalf("%d release batches sent, want the one that hung", releases)
	}
}

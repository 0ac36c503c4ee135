package capacity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/sim"
)

// shortGrants is a control plane whose configuration grants leases of ttl, whatever the worker
// asks for, and that stops answering renewals once silent is set.
type shortGrants struct {
	capacity.LeaseClient
	ttl    time.Duration
	silent bool
}

func (c *shortGrants) Acquire(ctx context.Context, cluster, holder string, limit int, _ time.Duration, now time.Time) (capacity.Lease, error) {
	return c.LeaseClient.Acquire(ctx, cluster, holder, limit, c.ttl, now)
}

func (c *shortGrants) Renew(ctx context.Context, ref capacity.LeaseRef, _ time.Duration, now time.Time) (capacity.Lease, error) {
	if c.silent {
		return capacity.Lease{}, errors.New("unreachable")
	}
	return c.LeaseClient.Renew(ctx, ref, c.ttl, now)
}

// TestLeaseGuardKeepsTheGrantedTTL: a worker asking for 30 s leases from a control plane that
// grants 6 s renews them in time (they stay held for a minute) and, once renewals stop
// answering, fences itself within the 6 s it was granted minus its drift margin, not 30 s.
func TestLeaseGuardKeepsTheGrantedTTL(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	n := s.AddNode("w", nil)
	store := capacity.NewMemory()
	client := &shortGrants{LeaseClient: store, ttl: 6 * time.Second}
	var slot capacity.Slot
	s.Spawn(n, "test", func() {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w",
			LeaseTTL: 30 * time.Second, DriftMargin: 2 * time.Second})
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		if slot, err = g.Acquire(n.Ctx(), "c", 1); err != nil {
			panic(err)
		}
	})
	var heldAt60 int
	var lostAt60, lostAt65 bool
	s.At(60*time.Second, func() {
		ls, _ := store.List(context.Background(), "c")
		heldAt60, lostAt60 = len(ls), slot.Lost()
		client.silent = true
	})
	s.At(65*time.Second, func() { lostAt65 = slot.Lost() })
	if err := s.Run(66 * time.Second); err != nil {
		t.Fatal(err)
	}
	if heldAt60 != 1 || lostAt60 {
		t.Fatalf("at 60 s: %d leases held, lost %v; want the 6 s lease renewed in time", heldAt60, lostAt60)
	}
	if !lostAt65 {
		t.Fatal("5 s after renewals stopped the slot still counts on a lease granted for 6 s")
	}
}

// lateGrants answers every acquire after delay (a worker frozen while its request was out).
type lateGrants struct {
	capacity.LeaseClient
	sleep func(context.Context) error
}

func (c *lateGrants) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	l, err := c.LeaseClient.Acquire(ctx, cluster, holder, limit, ttl, now)
	if err == nil {
		err = c.sleep(ctx)
	}
	return l, err
}

// TestLeaseGuardRefusesAGrantThatCameTooLate: a grant read back after the lease's fence time
// is not counted on: the acquire is answered ErrAtCapacity and the lease given back, so no
// query starts under a lease the control plane may already have reclaimed.
func TestLeaseGuardRefusesAGrantThatCameTooLate(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 9})
	n := s.AddNode("w", nil)
	store := capacity.NewMemory()
	client := &lateGrants{LeaseClient: store, sleep: func(ctx context.Context) error { return n.Env().Sleep(ctx, 5*time.Second) }}
	var err error
	s.Spawn(n, "test", func() {
		g, gerr := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w",
			LeaseTTL: 6 * time.Second, DriftMargin: 2 * time.Second, AcquireTimeout: time.Minute})
		if gerr != nil {
			panic(gerr)
		}
		g.Start(n.Ctx())
		_, err = g.Acquire(n.Ctx(), "c", 1)
	})
	if rerr := s.Run(10 * time.Second); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("a grant read 5 s after sending, with 4 s to count on it: %v, want ErrAtCapacity", err)
	}
	if ls, _ := store.List(context.Background(), "c"); len(ls) != 0 {
		t.Fatalf("the late lease was not given back: %+v", ls)
	}
}

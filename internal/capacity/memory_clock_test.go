package capacity_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/sim"
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

// TestMemoryWithClockRenewsByItsOwnClock: a renewal from a caller whose clock runs an hour
// ahead is judged and stamped by the store's clock: the lease is live there, so it is renewed,
// to the store's now plus the TTL. A renewal from a caller an hour behind cannot keep a lease
// the store's clock has seen expire.
func TestMemoryWithClockRenewsByItsOwnClock(t *testing.T) {
	db := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := capacity.NewMemory().WithClock(func() time.Time { return db })
	ctx := context.Background()
	l, err := m.Acquire(ctx, "c", "w", 1, time.Minute, db)
	if err != nil {
		t.Fatal(err)
	}
	db = db.Add(30 * time.Second)
	renewed, err := m.Renew(ctx, l.Ref(), time.Minute, db.Add(time.Hour))
	if err != nil || !renewed.ExpiresAt.Equal(db.Add(time.Minute)) {
		t.Fatalf("renewal from a caller an hour ahead: %+v %v, want expiry %v", renewed, err, db.Add(time.Minute))
	}
	db = db.Add(2 * time.Minute)
	if _, err := m.Renew(ctx, l.Ref(), time.Minute, db.Add(-time.Hour)); err == nil {
		t.Fatal("a caller an hour behind renewed a lease expired by the store's clock")
	}
}

// TestMemoryRevokesBySelection: a revocation selects by holder (a worker session that ended),
// by expiry, or by naming the leases, and nothing else: another holder's live lease stays.
func TestMemoryRevokesBySelection(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := capacity.NewMemory()
	_, _ = m.Acquire(ctx, "c", "w1", 3, time.Minute, now)
	theirs, _ := m.Acquire(ctx, "c", "w2", 3, time.Minute, now)
	short, _ := m.Acquire(ctx, "c", "w3", 3, time.Second, now)
	ids := func(ls []capacity.Lease) string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Holder)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		sel  capacity.Selection
		want string
	}{
		{capacity.Selection{}, ""},
		{capacity.Selection{Holder: "w1"}, "w1"},
		{capacity.Selection{Holder: "nobody"}, ""},
		{capacity.Selection{Expired: true}, ""},
		{capacity.Selection{Refs: []capacity.LeaseRef{theirs.Ref()}}, "w2"},
	} {
		got, err := m.Revoke(ctx, c.sel, now)
		if err != nil || ids(got) != c.want {
			t.Errorf("revoke %+v at the start: %q %v, want %q", c.sel, ids(got), err, c.want)
		}
	}
	if got, _ := m.Revoke(ctx, capacity.Selection{Expired: true}, now.Add(2*time.Second)); ids(got) != "w3" {
		t.Errorf("revoke of the expired 2 s later: %q, want w3 (%v)", ids(got), short.ExpiresAt)
	}
}

// TestMemoryListsByClusterThenGeneration: List of every cluster orders leases by cluster name,
// then generation, whatever the order they were granted in.
func TestMemoryListsByClusterThenGeneration(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := capacity.NewMemory()
	for _, c := range []string{"b", "a", "b", "c", "a"} {
		if _, err := m.Acquire(ctx, c, "w", 5, time.Minute, now); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := m.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.ID)
	}
	if strings.Join(got, " ") != "a#1 a#2 b#1 b#2 c#1" {
		t.Fatalf("listed %v", got)
	}
}

// TestMemoryOnMonotonicIgnoresWallSteps: the store of a control plane without a database
// (Memory.Monotonic, as `queryflux serve` builds it) counts lease terms on its process's
// monotonic clock. A wall step forward by ten minutes frees no live lease at the next sweep
// (a sweep by the callers' wall time revoked it and had it fenced), and a step back keeps no
// dead lease past its term (it would have lived ten minutes more). Both directions, on a
// simulated node whose wall clock steps as a real one does (sim.Node.StepWall).
func TestMemoryOnMonotonicIgnoresWallSteps(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("cp", nil)
	var failures []string
	s.Spawn(n, "test", func() {
		ctx, e := context.Background(), n.Env()
		m := capacity.NewMemory().Monotonic(e)
		sweep := func() []capacity.Lease {
			ls, _ := m.Revoke(ctx, capacity.Selection{Expired: true}, e.Now())
			return ls
		}
		live, _ := m.Acquire(ctx, "c", "w", 2, time.Minute, e.Now())
		_ = e.Sleep(ctx, 10*time.Second)
		if err := n.StepWall(10 * time.Minute); err != nil {
			panic(err)
		}
		if ls := sweep(); len(ls) != 0 {
			failures = append(failures, fmt.Sprintf("a wall step forward by 10m revoked live leases %v (50 s of their term left)", ls))
		}
		if _, err := m.Renew(ctx, live.Ref(), time.Minute, e.Now()); err != nil {
			failures = append(failures, fmt.Sprintf("renewing a live lease after the step forward: %v", err))
		}
		if err := n.StepWall(-20 * time.Minute); err != nil {
			panic(err)
		}
		dead, _ := m.Acquire(ctx, "c", "w", 2, time.Minute, e.Now())
		_ = e.Sleep(ctx, 61*time.Second)
		ls := sweep()
		if len(ls) != 2 || ls[1].ID != dead.ID {
			failures = append(failures, fmt.Sprintf("after a wall step back by 10m and 61 s, the sweep revoked %v; want both leases (past their terms)", ls))
		}
	})
	if err := s.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

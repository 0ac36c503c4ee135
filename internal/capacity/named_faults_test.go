package capacity

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// TestAnsweredNamedAcquiresAreNotSettled: a named acquire answered, whether granted on its
// retry after the first answer was lost or denied on its first sending, leaves nothing to
// settle: settling the retried grant would have the control plane free the lease a query is
// running under (its slot granted again to another worker: the cap overrun), and settling a
// denial is a round trip for nothing.
func TestAnsweredNamedAcquiresAreNotSettled(t *testing.T) {
	ctx := context.Background()
	s := sim.New(sim.Opts{Seed: 7})
	n := s.AddNode("w", nil)
	store := NewMemory()
	link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil), lose: []bool{true, false}}
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	s.Spawn(n, "test", func() {
		g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w", LeaseTTL: time.Minute})
		if err != nil {
			panic(err)
		}
		slot, err := g.Acquire(ctx, "c", 2)
		if err != nil || link.lost != 1 || link.calls[PathAcquire] != 2 {
			fail("an acquire whose first answer was lost: %v after %d sendings, %d lost; want granted on its retry", err, link.calls[PathAcquire], link.lost)
			return
		}
		link.off = true
		if _, err := store.Acquire(ctx, "c", "other", 2, time.Minute, n.Env().Now()); err != nil {
			panic(err)
		}
		if _, err := g.Acquire(ctx, "c", 2); err == nil {
			fail("an acquire of a full cluster granted")
		}
		sent := link.calls[PathAcquire]
		_ = g.flush(ctx, time.Time{}) // the flusher's round: releases, then settles
		if g.LostAcquires() != 0 || link.calls[PathAcquire] != sent || store.Count("c") != 2 {
			fail("after the flusher's round: %d acquires to settle, %d settles sent, %d leases held; want 0, 0 and 2 (the running query's and the other worker's)",
				g.LostAcquires(), link.calls[PathAcquire]-sent, store.Count("c"))
		}
		if slot.Lost() {
			fail("the running query's slot was lost")
		}
		slot.Release()
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// TestLostAcquiresAreBounded: a control plane whose every answer is lost, for longer than
// lostMax acquires take, leaves at most lostMax named acquires to settle: a worker's memory does
// not grow with the length of an outage (the oldest, whose leases expire first, are dropped);
// nor when acquires are lost while a round of settles, lost too, is in flight.
func TestLostAcquiresAreBounded(t *testing.T) {
	ctx := context.Background()
	s := sim.New(sim.Opts{Seed: 8})
	n := s.AddNode("w", nil)
	store := NewMemory()
	link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil), lose: []bool{true}}
	lost := 0
	s.Spawn(n, "test", func() {
		g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w", LeaseTTL: time.Hour})
		if err != nil {
			panic(err)
		}
		for range lostMax + 3 {
			if _, err := g.Acquire(ctx, "c", 1<<20); err == nil {
				panic("an acquire whose answers were all lost was granted")
			}
			_ = n.Env().Sleep(ctx, unreachableHold+time.Millisecond)
		}
		lost = g.LostAcquires()
	})
	var g *LeaseGuard
	afterSettles := 0
	link.before = func() { // an acquire lost while the settles are sent
		if g != nil && g.LostAcquires() == 0 {
			g.lose("c", "meanwhile", n.Env().Now())
		}
	}
	s.Spawn(n, "settles", func() {
		var err error
		if g, err = NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w2", LeaseTTL: time.Hour}); err != nil {
			panic(err)
		}
		for i := range lostMax {
			g.lose("c", fmt.Sprint("r", i), n.Env().Now())
		}
		if g.settleLost(ctx) {
			panic("settles whose answers were lost settled")
		}
		afterSettles = g.LostAcquires()
	})
	if err := s.Run(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if lost != lostMax || store.Count("c") != lostMax+3 {
		t.Fatalf("%d acquires lost: %d kept to settle (%d leases granted), want %d", lostMax+3, lost, store.Count("c"), lostMax)
	}
	if afterSettles != lostMax {
		t.Fatalf("%d lost acquires, one more lost while their settles were lost: %d kept to settle, want %d", lostMax, afterSettles, lostMax)
	}
}

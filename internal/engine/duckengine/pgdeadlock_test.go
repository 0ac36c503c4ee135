package duckengine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
)

// TestWaitCycle: waitCycle finds a cycle through self exactly when self can reach itself by
// waits (a party's wait for itself is none), and the cycle it answers is one: self first, no
// party twice, each waiting for the next and the last for self.
func TestWaitCycle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(t, "parties")
		edges := map[uint32][]uint32{}
		for p := uint32(1); p <= uint32(n); p++ {
			edges[p] = rapid.SliceOfNDistinct(rapid.Uint32Range(1, uint32(n)), 0, n, rapid.ID[uint32]).Draw(t, "waits")
		}
		self := rapid.Uint32Range(1, uint32(n)).Draw(t, "self")
		waitsFor := func(p uint32) []uint32 { return edges[p] }
		cycle := waitCycle(self, waitsFor)

		// The model: a breadth-first search from self's waits for self.
		reach, seen := false, map[uint32]bool{}
		next := []uint32{self}
		for len(next) > 0 && !reach {
			p := next[0]
			next = next[1:]
			for _, q := range edges[p] {
				if q == p {
					continue
				}
				if q == self {
					reach = true
				}
				if !seen[q] {
					seen[q] = true
					next = append(next, q)
				}
			}
		}
		if reach != (cycle != nil) {
			t.Fatalf("graph %v from %d: cycle %v; want one: %v", edges, self, cycle, reach)
		}
		if cycle == nil {
			return
		}
		if cycle[0] != self || len(cycle) < 2 {
			t.Fatalf("graph %v from %d: cycle %v does not start at self with another", edges, self, cycle)
		}
		for i, p := range cycle {
			if slices.Index(cycle, p) != i {
				t.Fatalf("graph %v: cycle %v has %d twice", edges, cycle, p)
			}
			if q := cycle[(i+1)%len(cycle)]; !slices.Contains(edges[p], q) {
				t.Fatalf("graph %v: cycle %v: %d does not wait for %d", edges, cycle, p, q)
			}
		}
	})
}

// TestDeadlockOnTheWriteLock: two sessions each waiting for the other, one for the write lock
// held by the other, the other for an advisory lock held by the first: the wait checked first
// (deadlock_timeout after it began) is answered 40P01 with PostgreSQL's DETAIL and leaves the
// lock's queue; a wait with no cycle is not answered.
func TestDeadlockOnTheWriteLock(t *testing.T) {
	var g waitGraph
	l := &writeLock{graph: &g}
	adv := &advisoryLocks{graph: &g}
	ctx := context.Background()
	a := &query.Request{Protocol: query.ProtocolPostgres, SessionID: 11}
	b := &query.Request{Protocol: query.ProtocolPostgres, SessionID: 22}
	if err := l.take(ctx, a, 0, 0, 0, false, ""); err != nil { // A holds the write lock
		t.Fatal(err)
	}
	if ok, err := adv.take(ctx, advisoryKey{a: 7}, "b", 22, 0, false, true, true); !ok || err != nil { // B holds 7
		t.Fatal(ok, err)
	}
	// A waits for 7 (a check at 10 s: none in this test); B for the write lock, checked at 50 ms.
	aDone := make(chan error, 1)
	go func() {
		_, err := adv.take(ctx, advisoryKey{a: 7}, "a", 11, 10*time.Second, false, true, true)
		aDone <- err
	}()
	for !waiting(&g, 11) {
		time.Sleep(time.Millisecond)
	}
	err := l.take(ctx, b, 0, 0, 50*time.Millisecond, false, "")
	var pe *pgconn.PgError
	if !isDeadlock(err) || !errors.As(err, &pe) {
		t.Fatalf("B's wait for the write lock: %v; want 40P01", err)
	}
	want := "Process 22 waits for ShareLock on transaction 1; blocked by process 11.\nProcess 11 waits for ExclusiveLock on advisory lock [0,0,7,1]; blocked by process 22."
	if pe.Detail != want || pe.Hint != "See server log for query details." {
		t.Fatalf("DETAIL %q HINT %q; want %q", pe.Detail, pe.Hint, want)
	}
	l.mu.Lock()
	queued := len(l.rules.queue)
	l.mu.Unlock()
	if queued != 0 || waiting(&g, 22) {
		t.Fatalf("B answered deadlock but %d waiters queued, still in the graph %v", queued, waiting(&g, 22))
	}
	adv.releaseAll("b", true, true)
	if err := <-aDone; err != nil {
		t.Fatalf("A's wait once B let go: %v", err)
	}
	// No cycle: C waits for A's write lock, checked at 20 ms, and is served at A's release.
	c := &query.Request{Protocol: query.ProtocolPostgres, SessionID: 33}
	cDone := make(chan error, 1)
	go func() { cDone <- l.take(ctx, c, 0, 0, 20*time.Millisecond, false, "") }()
	time.Sleep(100 * time.Millisecond)
	l.release()
	if err := <-cDone; err != nil {
		t.Fatalf("C's wait without a cycle: %v", err)
	}
}

// waiting: party p is in the graph.
func waiting(g *waitGraph, p uint32) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.waiting[p]
	return ok
}

package pgcapacity_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
)

// TestWatchHearsADenialAtAnotherReplica: two control-plane replicas (retry mode) on one lease
// table. Worker w1 holds cluster c's only slot and watches it at replica A; worker w2 is denied
// c at replica B. A's watch, asked to wait 20 s, answers c contended within a few of its
// rereads of the waiting record (every 50 ms): B's denial reached it through the shared store.
func TestWatchHearsADenialAtAnotherReplica(t *testing.T) {
	storeA, storeB, _ := twoReplicas(t)
	e := env.Real(nil)
	a := serve(t, capacity.NewAPI(storeA, storeA, e, nil))
	b := serve(t, capacity.NewAPI(storeB, storeB, e, nil))
	ctx := context.Background()
	if _, err := a.Acquire(ctx, "c", "w1", 1, time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		uncontended []string
		err         error
		after       time.Duration
	}
	answered := make(chan answer, 1)
	start := time.Now()
	go func() {
		unc, err := a.WatchContention(ctx, "w1", []string{"c"}, 20*time.Second)
		answered <- answer{unc, err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond) // the watch is held at A
	denied := time.Now()
	if _, err := b.Acquire(ctx, "c", "w2", 1, time.Minute, time.Now()); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("w2's acquire at B: %v, want denied", err)
	}
	select {
	case r := <-answered:
		t.Logf("answered %v after %v, %v after the denial at B", r.uncontended, r.after, time.Since(denied))
		if r.err != nil || slices.Contains(r.uncontended, "c") || r.after < 300*time.Millisecond {
			t.Fatalf("watch at A: uncontended %v, err %v after %v: want c contended, after the denial", r.uncontended, r.err, r.after)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch at A did not hear of the denial at B within 10 s")
	}
}

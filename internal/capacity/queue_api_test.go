package capacity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// TestWeightedQueueRefusesWeightsBelowOne: weights of 1 to 100 are taken (1 is a weight, not a
// mistake); 0 or less panics naming the worker, before any division by it.
func TestWeightedQueueRefusesWeightsBelowOne(t *testing.T) {
	newOrderedQueue().weighted(map[string]int{"one": 1, "hundred": 100})
	for _, w := range []int{0, -1} {
		func() {
			defer func() {
				want := fmt.Sprintf(`weight %d of "bad" must be >= 1`, w)
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
					t.Errorf("weight %d: panic %v, want one saying %s", w, r, want)
				}
			}()
			newOrderedQueue().weighted(map[string]int{"bad": w})
		}()
	}
}

// TestFullQueueDeniesAWaitingAcquireAtOnce: an acquire that may wait, on a cluster whose queue
// at this replica holds queueLenMax acquires already, is denied at once (at capacity), neither
// granted nor left waiting outside the queue until its wait runs out.
func TestFullQueueDeniesAWaitingAcquireAtOnce(t *testing.T) {
	store := NewMemory()
	api := NewAPI(store, store, env.Real(nil), nil).Ordered()
	// Only a hang detector: the denial needs no waiting at all.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := store.Acquire(ctx, "c", "holder", 1, time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	for range queueLenMax {
		if _, ok := api.queue.enqueue("c", "w", nil); !ok {
			t.Fatal("queue full below its bound")
		}
	}
	l, err := api.acquireOrdered(ctx, "c", "late", "", 1, time.Minute, AcquireWaitMax)
	if !errors.Is(err, ErrAtCapacity) {
		t.Fatalf("acquire on a full queue: %+v, %v; want denied at capacity at once", l, err)
	}
}

// TestWeightedAPIChargesEachGrant: through the API, not the queue alone, each grant moves its
// worker's mark, so two workers of weights 3 and 1 that keep two acquires each waiting on a
// cluster of cap 1 share its slot 3:1. Without the charge the heavier worker would always be
// the head and the lighter one never granted. The slot is handed on one grant at a time, each
// once all four acquires wait again, so the order is the queue's alone.
func TestWeightedAPIChargesEachGrant(t *testing.T) {
	store := NewMemory()
	api := NewAPI(store, store, env.Real(nil), nil).Weighted(map[string]int{"heavy": 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := store.Acquire(ctx, "c", "first", 1, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan Lease)
	for _, h := range []string{"heavy", "heavy", "light", "light"} {
		go func() {
			for ctx.Err() == nil {
				l, err := api.acquireOrdered(ctx, "c", h, "", 1, time.Minute, AcquireWaitMax)
				if err != nil {
					continue
				}
				select {
				case granted <- l:
				case <-ctx.Done():
				}
			}
		}()
	}
	waiting := func() int {
		api.queue.mu.Lock()
		defer api.queue.mu.Unlock()
		return len(api.queue.waiting["c"])
	}
	got := map[string]int{}
	for range 16 {
		for deadline := time.Now().Add(10 * time.Second); waiting() < 4; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d acquires wait, want 4", waiting())
			}
		}
		if err := store.Release(ctx, held.Ref()); err != nil {
			t.Fatal(err)
		}
		api.Freed([]LeaseRef{held.Ref()})
		held = <-granted
		got[held.Holder]++
	}
	if got["heavy"] != 12 || got["light"] != 4 {
		t.Fatalf("grants of 16: %v, want heavy 12, light 4 (weights 3:1)", got)
	}
}

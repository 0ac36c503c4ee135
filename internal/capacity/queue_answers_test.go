package capacity

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// failingStore is a Memory whose acquires fail as an unreachable database's do.
type failingStore struct{ *Memory }

func (failingStore) Acquire(context.Context, string, string, int, time.Duration, time.Time) (Lease, error) {
	return Lease{}, fmt.Errorf("%w: the lease table did not answer", ErrUnavailable)
}

// TestOrderedAcquireGrantsOnlyWithALease: an ordered acquire that may wait answers every way it
// can end without a slot as an error, never as a grant of an empty lease (which a worker would
// count as a slot): its wait running out (at capacity), its caller going away (the context's
// error), the store failing (that error), terms out of bounds (invalid, before it queues). And
// a queue with nobody in it has no head for ticket 0 to be.
func TestOrderedAcquireGrantsOnlyWithALease(t *testing.T) {
	store := NewMemory()
	api := NewAPI(store, store, env.Real(nil), nil).Ordered()
	if api.queue.isHead("c", 0) {
		t.Error("an empty queue has a head")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang detector
	defer cancel()
	if _, err := store.Acquire(ctx, "c", "first", 1, time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	expect := func(what string, l Lease, err, want error) {
		t.Helper()
		if !errors.Is(err, want) || l.ID != "" {
			t.Errorf("%s: %+v, %v; want no lease and %v", what, l, err, want)
		}
	}

	l, err := api.acquireOrdered(ctx, "c", "w", "", 1, time.Minute, 30*time.Millisecond)
	expect("a wait that runs out", l, err, ErrAtCapacity)

	gone, leave := context.WithCancel(ctx)
	time.AfterFunc(30*time.Millisecond, leave)
	l, err = api.acquireOrdered(gone, "c", "w", "", 1, time.Minute, AcquireWaitMax)
	expect("a caller that went away", l, err, context.Canceled)

	l, err = api.acquireOrdered(ctx, "c", "w", "", 0, time.Minute, time.Second)
	expect("a cap of 0", l, err, ErrInvalid)
	if !api.queue.empty("c") {
		t.Error("an invalid acquire was queued")
	}

	broken := NewAPI(failingStore{NewMemory()}, store, env.Real(nil), nil).Ordered()
	l, err = broken.acquireOrdered(ctx, "c", "w", "", 1, time.Minute, time.Second)
	expect("a store that fails", l, err, ErrUnavailable)
}

// TestWaitingOrderedAcquireIsContention: an ordered acquire that waits records that it waits,
// again and again while it waits (the record speaks for ContendedFor), so another worker asking
// about the cluster hears it is contended (and keeps no idle lease of it to reuse past the
// queue) for as long as it waits, not only its first second.
func TestWaitingOrderedAcquireIsContention(t *testing.T) {
	store := NewMemory()
	api := NewAPI(store, store, env.Real(nil), nil).Ordered()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang detector
	defer cancel()
	if _, err := store.Acquire(ctx, "c", "holder", 1, time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	if c, ok := api.contention(ctx, "c", "holder"); !ok || c.Others {
		t.Fatalf("before anyone waits: %+v, %v; want uncontended", c, ok)
	}
	if _, err := api.acquireOrdered(ctx, "c", "waiter", "", 1, time.Minute, ContendedFor*3/2); !errors.Is(err, ErrAtCapacity) {
		t.Fatalf("the waiting acquire: %v", err)
	}
	if c, ok := api.contention(ctx, "c", "holder"); !ok || !c.Others {
		t.Errorf("after another worker waited in the queue: %+v, %v; want contended", c, ok)
	}
}

// TestWeightedWaiterKeepsItsMark: a worker already waiting keeps its virtual-time mark when it
// queues another acquire; only a worker that starts waiting is brought up to the clock (else
// each extra acquire would cost a waiting worker the credit it is owed).
func TestWeightedWaiterKeepsItsMark(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{"a": 1})
	q.enqueue("c", "a", nil)
	q.clock["c"] = 10 * vtUnit
	q.enqueue("c", "a", nil)
	if got := q.last["c"]["a"]; got != 0 {
		t.Errorf("a's mark moved to %d (%.1f grants) when it queued a second acquire; want it kept at 0", got, float64(got)/vtUnit)
	}
	q.enqueue("c", "b", nil)
	if got, want := q.last["c"]["b"], 9*uint64(vtUnit); got != want {
		t.Errorf("b, starting to wait, has mark %d; want the clock less one grant's lag, %d", got, want)
	}
}

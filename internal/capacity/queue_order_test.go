package capacity

import (
	"testing"
)

// grantHead grants cluster's head and takes it out of the queue, as a granted acquire does, and
// returns its holder.
func grantHead(t *testing.T, q *orderedQueue, cluster string) string {
	t.Helper()
	q.mu.Lock()
	h, ok := q.headLocked(cluster)
	q.mu.Unlock()
	if !ok {
		t.Fatal("nobody waits")
	}
	q.granted(cluster, h.ticket)
	q.leave(cluster, h.ticket)
	return h.holder
}

// TestQueueIsBoundedPerCluster: a replica keeps at most queueLenMax waiting acquires per
// cluster (a flood of acquires is denied, not queued without end); other clusters still queue,
// and a place frees when a waiter leaves.
func TestQueueIsBoundedPerCluster(t *testing.T) {
	q := newOrderedQueue()
	var first uint64
	for i := range queueLenMax {
		ticket, ok := q.enqueue("c", "w", nil)
		if !ok {
			t.Fatalf("acquire %d refused below the bound %d", i+1, queueLenMax)
		}
		if i == 0 {
			first = ticket
		}
	}
	if _, ok := q.enqueue("c", "w", nil); ok {
		t.Fatalf("acquire %d queued over the bound", queueLenMax+1)
	}
	if _, ok := q.enqueue("other", "w", nil); !ok {
		t.Fatal("another cluster's acquire refused")
	}
	q.leave("c", first)
	if _, ok := q.enqueue("c", "w", nil); !ok {
		t.Fatal("no place after a waiter left")
	}
}

// TestWeightedQueueNewcomerBanksNoCredit: a worker that starts waiting after the others were
// granted for a while starts at the cluster's clock (less one grant of allowance): it gets its
// fair share from then on, not every grant until it has caught up with what the others had.
// A second acquire of a worker already waiting keeps the worker's mark.
func TestWeightedQueueNewcomerBanksNoCredit(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{})
	for _, h := range []string{"a", "a", "b", "b"} {
		q.enqueue("c", h, nil)
	}
	for range 40 { // a and b take turns; each granted acquire comes back
		q.enqueue("c", grantHead(t, q, "c"), nil)
	}
	q.enqueue("c", "new", nil)
	q.enqueue("c", "new", nil)
	got := map[string]int{}
	for range 9 {
		h := grantHead(t, q, "c")
		got[h]++
		q.enqueue("c", h, nil)
	}
	if got["new"] > 4 || got["a"] < 2 || got["b"] < 2 {
		t.Fatalf("the next 9 grants %v: the newcomer should get about a third", got)
	}
}

// TestWeightedQueueNewHeadIsSeen: the head is worked out again when a waiter joins: a worker of
// weight 100 that joins behind a worker of weight 1 is granted first.
func TestWeightedQueueNewHeadIsSeen(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{"heavy": 100})
	q.enqueue("c", "light", nil)
	q.enqueue("c", "light", nil)
	for range 4 { // the clock moves on, and light's head is known
		q.enqueue("c", grantHead(t, q, "c"), nil)
	}
	q.enqueue("c", "heavy", nil)
	if h := grantHead(t, q, "c"); h != "heavy" {
		t.Fatalf("granted %s first, want heavy (weight 100 against 1)", h)
	}
}

package capacity

import "testing"

// drainWeighted keeps waiting[holder] acquires of every holder waiting on one cluster and grants the
// head grants times, enqueueing a fresh acquire for the granted holder each time. It returns
// the grants per holder and fails if one holder's acquires were granted out of arrival order.
func drainWeighted(t *testing.T, q *orderedQueue, holders []string, waiting map[string]int, grants int) map[string]int {
	t.Helper()
	owner := map[uint64]string{}
	lastTicket := map[string]uint64{}
	join := func(h string) {
		ticket, ok := q.enqueue("c", h, nil)
		if !ok {
			t.Fatal("queue full")
		}
		owner[ticket] = h
	}
	for _, h := range holders { // one worker's acquires all arrive before the next one's
		for range waiting[h] {
			join(h)
		}
	}
	got := map[string]int{}
	for range grants {
		head := uint64(0)
		for ticket := range owner { // the one head, whatever the map's order
			if q.isHead("c", ticket) {
				if head != 0 {
					t.Fatalf("two heads: %d and %d", head, ticket)
				}
				head = ticket
			}
		}
		h := owner[head]
		if head <= lastTicket[h] {
			t.Fatalf("%s granted ticket %d after %d: not FIFO within a worker", h, head, lastTicket[h])
		}
		lastTicket[h] = head
		got[h]++
		q.granted("c", head)
		q.leave("c", head)
		delete(owner, head)
		join(h)
	}
	return got
}

// TestWeightedQueueSharesGrantsByWeight: two workers of weights 1 and 3 that always wait get
// grants 1:3, each worker's own acquires in arrival order.
func TestWeightedQueueSharesGrantsByWeight(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{"heavy": 3})
	got := drainWeighted(t, q, []string{"light", "heavy"}, map[string]int{"light": 4, "heavy": 4}, 400)
	ratio := float64(got["heavy"]) / float64(got["light"])
	if ratio < 2.8 || ratio > 3.2 {
		t.Fatalf("grants %v: heavy/light %.2f, want 3 +- 0.2", got, ratio)
	}
}

// TestWeightedQueueEqualWeightsAlternate: equal weights split grants evenly even when one
// worker queued far more acquires first (weighted fair is per worker, not per acquire).
func TestWeightedQueueEqualWeightsAlternate(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{})
	got := drainWeighted(t, q, []string{"early", "late"}, map[string]int{"early": 20, "late": 1}, 100)
	if got["late"] < 45 {
		t.Fatalf("grants %v: the late worker should get about half of 100", got)
	}
}

// TestWeightedQueueIdleClusterForgets: once a cluster's queue empties, a worker that was
// granted much starts even with a newcomer again.
func TestWeightedQueueIdleClusterForgets(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{"a": 2})
	for range 5 {
		ticket, _ := q.enqueue("c", "a", nil)
		q.granted("c", ticket)
		q.leave("c", ticket)
	}
	if len(q.last) != 0 || len(q.clock) != 0 {
		t.Fatalf("idle cluster kept state: last %v clock %v", q.last, q.clock)
	}
	ta, _ := q.enqueue("c", "a", nil)
	tb, _ := q.enqueue("c", "b", nil)
	if !q.isHead("c", ta) || q.isHead("c", tb) {
		t.Fatal("after idling, the heavier worker arriving first should be head")
	}
}

// TestUnweightedQueueIsArrivalOrder: without weights the head is always the oldest waiter,
// however many acquires one worker has queued.
func TestUnweightedQueueIsArrivalOrder(t *testing.T) {
	q := newOrderedQueue()
	var tickets []uint64
	for _, h := range []string{"a", "a", "a", "b"} {
		ticket, _ := q.enqueue("c", h, nil)
		tickets = append(tickets, ticket)
	}
	for _, ticket := range tickets {
		if !q.isHead("c", ticket) {
			t.Fatalf("ticket %d is not head in arrival order", ticket)
		}
		q.granted("c", ticket)
		q.leave("c", ticket)
	}
}

// TestWeightedQueueUngrantedWaitsCostNothing: acquires that leave without a grant (their wait
// ran out) do not push their worker back; an absent worker banks at most one grant of credit.
func TestWeightedQueueUngrantedWaitsCostNothing(t *testing.T) {
	q := newOrderedQueue()
	q.weighted(map[string]int{})
	keep, _ := q.enqueue("c", "b", nil) // keeps the cluster busy throughout
	for range 50 {
		ticket, _ := q.enqueue("c", "a", nil)
		q.leave("c", ticket) // timed out
	}
	ta, _ := q.enqueue("c", "a", nil)
	if !q.isHead("c", keep) { // equal marks: the older waiter
		t.Fatal("b, waiting longer, should be head")
	}
	q.granted("c", keep)
	q.leave("c", keep)
	if !q.isHead("c", ta) {
		t.Fatal("a's timed-out acquires cost it its turn")
	}
	// b is gone; a is granted 10 times; b comes back with at most one grant of lag.
	for range 10 {
		q.granted("c", ta)
		q.leave("c", ta)
		ta, _ = q.enqueue("c", "a", nil)
	}
	tb, _ := q.enqueue("c", "b", nil)
	got := map[string]int{}
	for range 4 {
		holder, ticket := "a", &ta
		if q.isHead("c", tb) {
			holder, ticket = "b", &tb
		}
		got[holder]++
		q.granted("c", *ticket)
		q.leave("c", *ticket)
		*ticket, _ = q.enqueue("c", holder, nil)
	}
	if got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("after b's absence, 4 turns went %v, want 2 each (no banked credit)", got)
	}
}

package capacity

import (
	"log/slog"
	"testing"

	"github.com/queryflux/queryflux/node/env"
)

// drainWeighted keeps waiting[holder] acquires of every holder waiting on one cluster and grants the
// head grants times, enqueueing a fresh acquire for the granted holder each time. It returns
// the grants per holder and fails if one holder's acquires were granted out of arrival order.
func drainWeighted(t *testing.T, q *orderedQueue, holders []string, waiting map[string]int, grants int) map[string]int {
	t.Helper()
	owner := map[uint64]string{}
	lastTicket := map[string]uint64{}
	join := func(h string) {
		ticket, ok := q.enqueue("c", h)
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
	q := newOrderedQueue(env.Real(slog.Default()))
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
	q := newOrderedQueue(env.Real(slog.Default()))
	q.weighted(map[string]int{})
	got := drainWeighted(t, q, []string{"early", "late"}, map[string]int{"early": 20, "late": 1}, 100)
	if got["late"] < 45 {
		t.Fatalf("grants %v: the late worker should get about half of 100", got)
	}
}

// TestWeightedQueueIdleClusterForgets: once a cluster's queue empties, a worker that was
// granted much starts even with a newcomer again.
func TestWeightedQueueIdleClusterForgets(t *testing.T) {
	q := newOrderedQueue(env.Real(slog.Default()))
	q.weighted(map[string]int{"a": 2})
	for range 5 {
		ticket, _ := q.enqueue("c", "a")
		q.granted("c", ticket)
		q.leave("c", ticket)
	}
	if len(q.last) != 0 || len(q.clock) != 0 {
		t.Fatalf("idle cluster kept state: last %v clock %v", q.last, q.clock)
	}
	ta, _ := q.enqueue("c", "a")
	tb, _ := q.enqueue("c", "b")
	if !q.isHead("c", ta) || q.isHead("c", tb) {
		t.Fatal("after idling, the heavier worker arriving first should be head")
	}
}

// TestUnweightedQueueIsArrivalOrder: without weights the head is always the oldest waiter,
// however many acquires one worker has queued.
func TestUnweightedQueueIsArrivalOrder(t *testing.T) {
	q := newOrderedQueue(env.Real(slog.Default()))
	var tickets []uint64
	for _, h := range []string{"a", "a", "a", "b"} {
		ticket, _ := q.enqueue("c", h)
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

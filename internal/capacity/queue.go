package capacity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// Limits of the ordered queue (coordination.queue: ordered).
const (
	// AcquireWaitMax bounds how long one acquire may long-poll.
	AcquireWaitMax = 60 * time.Second
	// queuePollEvery is how often a waiting head asks the store again without a local wake-up:
	// slots also free through other replicas and the sweeper, which no local signal reports.
	queuePollEvery = 250 * time.Millisecond
	queueLenMax    = 10000 // waiting acquires per cluster on one replica
)

// orderedQueue grants waiting acquires of each cluster in turn on this replica: only the head
// waiter asks the store; when it is granted (or leaves) the next one asks at once, so several
// free slots drain in order within one round of wake-ups.
//
// Without weights the head is the oldest waiter (arrival order). With weights (API.Weighted)
// the queue is weighted fair per worker (the lease holder): each waiter is stamped on arrival
// with a virtual finish time max(clock, the worker's last finish) + unit/weight, the head is the
// smallest finish (ties: the older ticket), and a grant moves the cluster's virtual clock to the
// granted finish. Among workers that keep waiting, each one's share of grants approaches its
// weight's share; one worker's own acquires keep their arrival order (its finishes grow).
type orderedQueue struct {
	changed env.Signal // a waiter left the queue, or a release landed

	mu      sync.Mutex
	next    uint64
	waiting map[string][]waiter          // cluster -> waiters, in arrival order
	weights map[string]int               // holder -> weight (absent: 1); nil: arrival order
	clock   map[string]uint64            // cluster -> virtual time (weighted only)
	last    map[string]map[string]uint64 // cluster -> holder -> last virtual finish (weighted only)
}

// waiter is one acquire waiting in a cluster's queue.
type waiter struct {
	ticket uint64
	holder string
	finish uint64 // virtual finish time; 0 when unweighted
}

// vtUnit is the virtual time one grant costs a worker of weight 1 (weights divide it; 100, the
// largest weight, divides it evenly, as do all weights up to 16). A uint64 clock lasts 2.5e11
// grants of weight 1 on a cluster that never empties; an idle cluster starts again at 0.
const vtUnit = 720720 * 100

func newOrderedQueue(e env.Env) *orderedQueue {
	return &orderedQueue{changed: e.NewSignal(), waiting: map[string][]waiter{}}
}

// weighted switches the queue to weighted fair order. Call before use.
func (q *orderedQueue) weighted(weights map[string]int) {
	q.weights = map[string]int{}
	for h, w := range weights {
		if w < 1 {
			panic(fmt.Sprintf("capacity: weight %d of %q must be >= 1", w, h))
		}
		q.weights[h] = w
	}
	q.clock = map[string]uint64{}
	q.last = map[string]map[string]uint64{}
}

func (q *orderedQueue) weightOf(holder string) int {
	if w, ok := q.weights[holder]; ok {
		return w
	}
	return 1
}

func (q *orderedQueue) enqueue(cluster, holder string) (uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting[cluster]) >= queueLenMax {
		return 0, false
	}
	q.next++
	w := waiter{ticket: q.next, holder: holder}
	if q.weights != nil {
		last := q.last[cluster]
		if last == nil {
			last = map[string]uint64{}
			q.last[cluster] = last
		}
		w.finish = max(q.clock[cluster], last[holder]) + vtUnit/uint64(q.weightOf(holder))
		last[holder] = w.finish
	}
	q.waiting[cluster] = append(q.waiting[cluster], w)
	return q.next, true
}

// granted advances the cluster's virtual clock to the granted waiter's finish.
func (q *orderedQueue) granted(cluster string, ticket uint64) {
	if q.weights == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, w := range q.waiting[cluster] {
		if w.ticket == ticket {
			q.clock[cluster] = max(q.clock[cluster], w.finish)
			return
		}
	}
}

func (q *orderedQueue) leave(cluster string, ticket uint64) {
	q.mu.Lock()
	w := q.waiting[cluster]
	for i, x := range w {
		if x.ticket == ticket {
			w = append(w[:i:i], w[i+1:]...)
			break
		}
	}
	if len(w) == 0 {
		delete(q.waiting, cluster)
		q.forget(cluster)
	} else {
		q.waiting[cluster] = w
	}
	q.mu.Unlock()
	q.changed.Notify()
}

// forget resets an idle cluster's virtual time: once nobody waits, every worker would start at
// the clock anyway (a finish above it belonged to a waiter that left ungranted, a debt worth
// dropping). Keeps the maps from growing with past workers and the clock from running out.
func (q *orderedQueue) forget(cluster string) {
	if q.weights != nil {
		delete(q.last, cluster)
		delete(q.clock, cluster)
	}
}

func (q *orderedQueue) isHead(cluster string, ticket uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.waiting[cluster]
	if len(w) == 0 {
		return false
	}
	head := w[0]
	for _, x := range w[1:] { // arrival order: on equal finishes the older ticket stays head
		if x.finish < head.finish {
			head = x
		}
	}
	return head.ticket == ticket
}

func (q *orderedQueue) empty(cluster string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting[cluster]) == 0
}

// acquireOrdered is Acquire for the ordered queue: a caller willing to wait (wait > 0) joins the
// cluster's queue and is granted when its turn comes and a slot is free, or denied when wait
// runs out; a caller not willing to wait is denied while others wait.
func (a *API) acquireOrdered(ctx context.Context, cluster, holder string, limit int, ttl, wait time.Duration) (Lease, error) {
	q := a.queue
	if wait <= 0 {
		if !q.empty(cluster) {
			return Lease{}, ErrAtCapacity
		}
		return a.store.Acquire(ctx, cluster, holder, limit, ttl, a.env.Now())
	}
	if err := CheckAcquire(cluster, holder, limit, ttl); err != nil {
		return Lease{}, err
	}
	deadline := a.env.Now().Add(min(wait, AcquireWaitMax))
	ticket, ok := q.enqueue(cluster, holder)
	if !ok {
		return Lease{}, ErrAtCapacity
	}
	defer q.leave(cluster, ticket)
	for {
		seen := q.changed.Seq()
		if q.isHead(cluster, ticket) {
			l, err := a.store.Acquire(ctx, cluster, holder, limit, ttl, a.env.Now())
			if err == nil {
				q.granted(cluster, ticket)
			}
			if !errors.Is(err, ErrAtCapacity) {
				return l, err
			}
		}
		left := deadline.Sub(a.env.Now())
		if left <= 0 {
			return Lease{}, ErrAtCapacity
		}
		wctx, cancel := a.env.WithTimeout(ctx, min(left, queuePollEvery))
		_ = q.changed.Wait(wctx, seen)
		cancel()
		if err := ctx.Err(); err != nil {
			return Lease{}, err
		}
	}
}

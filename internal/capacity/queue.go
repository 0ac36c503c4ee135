package capacity

import (
	"context"
	"errors"
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

// orderedQueue grants waiting acquires of each cluster in arrival order on this replica: only
// the oldest waiter asks the store; when it is granted (or leaves) the next one asks at once, so
// several free slots drain in order within one round of wake-ups.
type orderedQueue struct {
	changed env.Signal // a waiter left the queue, or a release landed

	mu      sync.Mutex
	next    uint64
	waiting map[string][]uint64 // cluster -> tickets, oldest first
}

func newOrderedQueue(e env.Env) *orderedQueue {
	return &orderedQueue{changed: e.NewSignal(), waiting: map[string][]uint64{}}
}

func (q *orderedQueue) enqueue(cluster string) (uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting[cluster]) >= queueLenMax {
		return 0, false
	}
	q.next++
	q.waiting[cluster] = append(q.waiting[cluster], q.next)
	return q.next, true
}

func (q *orderedQueue) leave(cluster string, ticket uint64) {
	q.mu.Lock()
	w := q.waiting[cluster]
	for i, t := range w {
		if t == ticket {
			w = append(w[:i:i], w[i+1:]...)
			break
		}
	}
	if len(w) == 0 {
		delete(q.waiting, cluster)
	} else {
		q.waiting[cluster] = w
	}
	q.mu.Unlock()
	q.changed.Notify()
}

func (q *orderedQueue) isHead(cluster string, ticket uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.waiting[cluster]
	return len(w) > 0 && w[0] == ticket
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
	ticket, ok := q.enqueue(cluster)
	if !ok {
		return Lease{}, ErrAtCapacity
	}
	defer q.leave(cluster, ticket)
	for {
		seen := q.changed.Seq()
		if q.isHead(cluster, ticket) {
			l, err := a.store.Acquire(ctx, cluster, holder, limit, ttl, a.env.Now())
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

package capacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// Limits of the ordered queue (coordination.queue: ordered).
const (
	// AcquireWaitMax bounds how long one acquire may long-poll.
	AcquireWaitMax = 60 * time.Second
	// queuePollEvery is how often a waiting head asks the store again without a wake-up: slots
	// also free by expiring, and through other replicas when the store cannot tell (memory).
	// This replica's releases and its sweeper's reclaims wake the head (released, API.Freed),
	// and so do other replicas' through a store that can tell (FreedWatcher, API.WatchFreed).
	queuePollEvery = 250 * time.Millisecond
	queueLenMax    = 10000 // waiting acquires per cluster on one replica
)

// orderedQueue grants waiting acquires of each cluster in turn on this replica: only the head
// waiter asks the store; when it is granted (or leaves) the next one asks at once, so several
// free slots drain in order within one round of wake-ups. Each waiter has a signal of its own,
// and only a head is woken (by a release of its cluster, or by becoming the head): with
// thousands waiting, waking every waiter of every cluster on each release to find it is not
// the head was most of a control plane's work.
//
// Without weights the head is the oldest waiter (arrival order). With weights (API.Weighted)
// the queue is weighted fair per worker (the lease holder), by virtual finish time (start-time
// fair queuing): when a worker starts waiting, its mark moves up to the cluster's clock if it
// lags; its next grant finishes at mark + unit/weight; the head is the oldest waiter of the
// worker whose next grant finishes first (ties: the older waiter); a grant moves the worker's
// mark to that finish and the clock to where the grant started. Among workers that keep
// waiting, each one's share of grants approaches its weight's share; one worker's acquires keep
// their arrival order. Marks move only on grants, so an acquire that leaves ungranted (its wait
// ran out) costs its worker nothing, and a worker that stops waiting banks no credit.
type orderedQueue struct {
	mu      sync.Mutex
	next    uint64
	waiting map[string][]waiter // cluster -> waiters, in arrival order
	weights map[string]int      // worker (HolderWorker) -> weight (absent: 1); nil: arrival order
	// Weighted only: per cluster, the virtual clock, each worker's last finish, and the head
	// (absent: work it out again; waiters joined or left since).
	clock map[string]uint64
	last  map[string]map[string]uint64
	head  map[string]waiter
}

// waiter is one acquire waiting in a cluster's queue.
type waiter struct {
	ticket uint64
	holder string
	wake   env.Signal // notified when this waiter may get a slot now; nil in tests of the order
}

// vtUnit is the virtual time one grant costs a worker of weight 1 (weights divide it; 100, the
// largest weight, divides it evenly, as do all weights up to 16). A uint64 clock lasts 2.5e11
// grants of weight 1 on a cluster that never empties; an idle cluster starts again at 0.
const vtUnit = 720720 * 100

func newOrderedQueue() *orderedQueue {
	return &orderedQueue{waiting: map[string][]waiter{}}
}

// weighted switches the queue to weighted fair order. Call before use.
func (q *orderedQueue) weighted(weights map[string]int) {
	q.weights = map[string]int{}
	for h, w := range weights { //determinism:ok a copy; order does not matter
		if w < 1 {
			panic(fmt.Sprintf("capacity: weight %d of %q must be >= 1", w, h))
		}
		q.weights[h] = w
	}
	q.clock = map[string]uint64{}
	q.last = map[string]map[string]uint64{}
	q.head = map[string]waiter{}
}

func (q *orderedQueue) weightOf(holder string) int {
	if w, ok := q.weights[HolderWorker(holder)]; ok {
		return w
	}
	return 1
}

// nextFinish is when holder's next grant on cluster would finish, in virtual time. q.mu held.
func (q *orderedQueue) nextFinish(cluster, holder string) uint64 {
	return q.last[cluster][holder] + vtUnit/uint64(q.weightOf(holder))
}

// markStart brings holder's mark up to the cluster's clock when it starts waiting, so time it
// spent not waiting is no credit. q.mu held; call before adding the holder's waiter.
func (q *orderedQueue) markStart(cluster, holder string) {
	for _, w := range q.waiting[cluster] {
		if w.holder == holder {
			return // already waiting: keeps its mark
		}
	}
	last := q.last[cluster]
	if last == nil {
		last = map[string]uint64{}
		q.last[cluster] = last
	}
	// A worker may keep up to one grant of lag: its acquires long-poll for a bounded time and
	// come back after a round trip, so a worker that always wants slots is briefly absent
	// between two acquires; without the allowance those gaps alone cost it its share.
	lag := vtUnit / uint64(q.weightOf(holder))
	if c := q.clock[cluster]; c > lag {
		last[holder] = max(last[holder], c-lag)
	}
}

// enqueue adds an acquire of holder to cluster's queue; wake is notified when it becomes the
// head, and while it is the head, when a slot of cluster is released.
func (q *orderedQueue) enqueue(cluster, holder string, wake env.Signal) (uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting[cluster]) >= queueLenMax {
		return 0, false
	}
	q.next++
	if q.weights != nil {
		q.markStart(cluster, holder)
		delete(q.head, cluster)
	}
	q.waiting[cluster] = append(q.waiting[cluster], waiter{ticket: q.next, holder: holder, wake: wake})
	return q.next, true
}

// granted charges the granted waiter's worker its grant: its mark moves to the grant's finish
// and the cluster's clock to the grant's start. Call before leave, which works out the next
// head (and wakes it): until then the granted waiter stays the head.
func (q *orderedQueue) granted(cluster string, ticket uint64) {
	if q.weights == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, w := range q.waiting[cluster] {
		if w.ticket != ticket {
			continue
		}
		start := q.last[cluster][w.holder] // set by markStart: the holder waits
		q.last[cluster][w.holder] = q.nextFinish(cluster, w.holder)
		q.clock[cluster] = max(q.clock[cluster], start)
		return
	}
}

// leave takes an acquire out of cluster's queue, and wakes the next head if that changed it.
func (q *orderedQueue) leave(cluster string, ticket uint64) {
	q.mu.Lock()
	before, _ := q.headLocked(cluster)
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
	if q.weights != nil {
		delete(q.head, cluster)
	}
	after, ok := q.headLocked(cluster)
	q.mu.Unlock()
	if ok && after.ticket != before.ticket && after.wake != nil {
		after.wake.Notify()
	}
}

// released wakes the head of each cluster of refs: a slot of it may be free now.
func (q *orderedQueue) released(refs []LeaseRef) {
	clusters := make([]string, len(refs))
	for i, r := range refs {
		clusters[i] = r.Cluster()
	}
	q.freed(clusters)
}

// freed wakes the head of each of clusters (AllClusters: of every cluster with waiters).
func (q *orderedQueue) freed(clusters []string) {
	var wake []env.Signal
	seen := map[string]bool{}
	q.mu.Lock()
	if slices.Contains(clusters, AllClusters) {
		clusters = slices.Sorted(maps.Keys(q.waiting)) // sorted: the wake order is the simulator's
	}
	for _, c := range clusters {
		if seen[c] {
			continue
		}
		seen[c] = true
		if h, ok := q.headLocked(c); ok && h.wake != nil {
			wake = append(wake, h.wake)
		}
	}
	q.mu.Unlock()
	for _, s := range wake { // outside the lock: a notify runs the simulator's wake-ups
		s.Notify()
	}
}

// forget resets an idle cluster's virtual time: once nobody waits, every worker would start at
// the clock anyway. Keeps the maps from growing with past workers and the clock from running
// out. q.mu held.
func (q *orderedQueue) forget(cluster string) {
	if q.weights != nil {
		delete(q.last, cluster)
		delete(q.clock, cluster)
	}
}

func (q *orderedQueue) isHead(cluster string, ticket uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	h, ok := q.headLocked(cluster)
	return ok && h.ticket == ticket
}

// headLocked is cluster's head waiter (false when nobody waits). q.mu held.
func (q *orderedQueue) headLocked(cluster string) (waiter, bool) {
	w := q.waiting[cluster]
	if len(w) == 0 {
		return waiter{}, false
	}
	if q.weights == nil {
		return w[0], true
	}
	head, ok := q.head[cluster]
	if !ok {
		head = q.weightedHead(cluster)
		q.head[cluster] = head
	}
	return head, true
}

// weightedHead is the oldest waiter of the worker whose next grant finishes first; on equal
// finishes the older waiter wins. q.mu held; cluster has waiters.
func (q *orderedQueue) weightedHead(cluster string) waiter {
	seen := map[string]bool{}
	var head waiter
	var best uint64
	for _, w := range q.waiting[cluster] { // arrival order: each worker's first is its oldest
		if seen[w.holder] {
			continue
		}
		seen[w.holder] = true
		if f := q.nextFinish(cluster, w.holder); head.ticket == 0 || f < best {
			head, best = w, f
		}
	}
	return head
}

func (q *orderedQueue) empty(cluster string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting[cluster]) == 0
}

// acquireOrdered is Acquire for the ordered queue: a caller willing to wait (wait > 0) joins the
// cluster's queue and is granted when its turn comes and a slot is free, or denied when wait
// runs out; a caller not willing to wait is denied while others wait.
func (a *API) acquireOrdered(ctx context.Context, cluster, holder, request string, limit int, ttl, wait time.Duration) (Lease, error) {
	q := a.queue
	if wait <= 0 {
		if !q.empty(cluster) {
			return Lease{}, ErrAtCapacity
		}
		return a.acquire(ctx, cluster, holder, request, limit, ttl)
	}
	if err := CheckAcquire(cluster, holder, limit, ttl); err != nil {
		return Lease{}, err
	}
	deadline := a.env.Now().Add(min(wait, AcquireWaitMax))
	wake := a.env.NewSignal()
	ticket, ok := q.enqueue(cluster, holder, wake)
	if !ok {
		return Lease{}, ErrAtCapacity
	}
	defer q.leave(cluster, ticket)
	var marked time.Time // when this acquire last recorded that it waits
	for {
		seen := wake.Seq()
		if q.isHead(cluster, ticket) {
			l, err := a.acquire(ctx, cluster, holder, request, limit, ttl)
			if err == nil {
				q.granted(cluster, ticket)
			}
			if !errors.Is(err, ErrAtCapacity) {
				return l, err
			}
		}
		if now := a.env.Now(); marked.IsZero() || now.Sub(marked) >= ContendedFor/4 {
			// This acquire waits: others should not skip it. Ordered mode reads only the
			// record's contention window, so one write per quarter of it is enough.
			a.markDenied(ctx, cluster, holder)
			marked = now
		}
		left := deadline.Sub(a.env.Now())
		if left <= 0 {
			return Lease{}, ErrAtCapacity
		}
		wctx, cancel := a.env.WithTimeout(ctx, min(left, a.pollEvery))
		_ = wake.Wait(wctx, seen)
		cancel()
		if err := ctx.Err(); err != nil {
			return Lease{}, err
		}
	}
}

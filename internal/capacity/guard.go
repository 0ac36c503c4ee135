package capacity

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/invariants"
)

// Guard hands out capacity slots per cluster so that at most cap queries run on it at once.
//
// Acquire never waits for a slot to free: it answers at once (or after one round trip to the
// coordination service) with a slot, or ErrAtCapacity; the proxy core does the queueing. A cap
// below 1 never has a slot. Other errors (ErrUnavailable under onUnavailable: failClosed, a
// context error) fail the query.
type Guard interface {
	Acquire(ctx context.Context, cluster string, limit int) (Slot, error)
}

// AtOnce is a Guard that can say whether its Acquire answers without a network round trip
// (a caller on an event loop's thread must not block).
type AtOnce interface {
	AtOnce() bool
}

// IdleTaker is a Guard that keeps released slots idle for a while and can hand one out
// without a round trip: TakeIdle answers nil, at once, when it has none for cluster. spare is a
// slot of the guard that its caller released and holds no more, not even to ask it anything
// (nil: none): the answer may be that memory again, sparing an allocation per leased statement.
// now is the caller's reading of the guard's clock for this admission (the proxy core's, taken
// as it began): the lease's hold and reuse window are judged at it, sparing a clock read per
// leased statement. affinity is the query's query.Affinity, given rather than read from a
// context: a context's walk to it cost two lookups a leased statement.
type IdleTaker interface {
	TakeIdle(affinity uint64, cluster string, limit int, spare Slot, now time.Time) Slot
}

// Slot is one running query's claim on a cluster.
type Slot interface {
	// Release gives the slot back. Call it exactly once. It never blocks on the network: a
	// lease is released by a background batch.
	Release()
	// Lost reports whether self-fencing dropped the slot's lease; the query must stop.
	Lost() bool
	// OnLost registers fn to run once when the lease is lost (at once if it already is); pass
	// the query's cancel function. fn runs in the guard's keeper task and must not block.
	OnLost(fn func())
}

// LocalGuard counts running queries per cluster in this process: the guard of coordination
// mode local, and the fallback under onUnavailable: localLimits.
type LocalGuard struct {
	mu      sync.Mutex
	running map[string]int
}

// NewLocalGuard returns an empty local guard.
func NewLocalGuard() *LocalGuard { return &LocalGuard{running: map[string]int{}} }

var _ Guard = (*LocalGuard)(nil)

// Acquire implements Guard.
func (g *LocalGuard) Acquire(ctx context.Context, cluster string, limit int) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !g.take(cluster, limit) {
		return nil, ErrAtCapacity
	}
	return &localSlot{g: g, cluster: cluster}, nil
}

// AtOnce implements AtOnce: the local guard only counts.
func (g *LocalGuard) AtOnce() bool { return true }

func (g *LocalGuard) take(cluster string, limit int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[cluster] >= limit {
		return false
	}
	g.running[cluster]++
	return true
}

func (g *LocalGuard) give(cluster string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[cluster]--
	if g.running[cluster] < 0 {
		panic(fmt.Sprintf("capacity: local running count of %q went negative", cluster))
	}
}

// Running is the number of slots held on cluster.
func (g *LocalGuard) Running(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[cluster]
}

type localSlot struct {
	g        *LocalGuard
	cluster  string
	released invariants.Once
}

func (s *localSlot) Release() {
	if s.released.Close("capacity slot on", s.cluster) {
		s.g.give(s.cluster)
	}
}

func (s *localSlot) Lost() bool       { return false }
func (s *localSlot) OnLost(fn func()) {}
func (s *localSlot) NeverLost()       {}

// Unlosable is a Slot that is never lost (a local count, no lease): OnLost never runs its fn,
// so a caller may spare making one (a method value is an allocation, on every transaction of
// a pooled client).
type Unlosable interface{ NeverLost() }

// Settled reports whether slot can run none of its OnLost functions any more and ran none: an
// Unlosable slot, or a lease's released before it was lost. Then what those functions reach is
// its caller's alone again (a wire session's memory, for the next transaction).
func Settled(slot Slot) bool {
	switch s := slot.(type) {
	case Unlosable:
		return true
	case *leaseSlot:
		return s.settled()
	}
	return false
}

package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrNoSlot is what a Guard returns (or wraps) when the cluster has no free slot right now. The
// core then tries the next member, and queues when none has one.
var ErrNoSlot = errors.New("no capacity slot free")

// Guard hands out capacity slots per cluster so that at most cap queries run on it at once. The
// local guard counts in memory; a worker's guard asks the control plane for leases.
//
// Acquire must not wait for a slot to free: it answers at once (or after one round trip) with a
// slot or ErrNoSlot; the core does the queueing. Any other error fails the query.
type Guard interface {
	Acquire(ctx context.Context, cluster string, cap int) (Slot, error)
}

// Slot is one running query's claim on a cluster. Release is called exactly once.
type Slot interface {
	Release()
}

// LocalGuard counts running queries per cluster in memory: the standalone proxy's guard.
type LocalGuard struct {
	mu      sync.Mutex
	running map[string]int
}

// NewLocalGuard returns an empty guard.
func NewLocalGuard() *LocalGuard { return &LocalGuard{running: map[string]int{}} }

// Acquire takes a slot on cluster if fewer than cap are taken.
func (g *LocalGuard) Acquire(ctx context.Context, cluster string, cap int) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[cluster] >= cap {
		return nil, ErrNoSlot
	}
	g.running[cluster]++
	return &localSlot{g: g, cluster: cluster}, nil
}

// Running is the number of slots taken on cluster.
func (g *LocalGuard) Running(cluster string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[cluster]
}

type localSlot struct {
	g        *LocalGuard
	cluster  string
	released bool
}

func (s *localSlot) Release() {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	if s.released {
		panic(fmt.Sprintf("proxy: slot on %s released twice", s.cluster))
	}
	s.released = true
	s.g.running[s.cluster]--
	if s.g.running[s.cluster] < 0 {
		panic(fmt.Sprintf("proxy: running count on %s went negative", s.cluster))
	}
}

package capacitytest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/capacity"
)

// LosingGuard is a local capacity guard (capacity.LocalGuard: its limits hold and it answers
// at once) for tests of what a lost lease does: every slot it grants can be lost, as a
// worker's leases are when they cannot be renewed, and it counts the slots it granted. It can
// also be made unavailable, as a guard is whose control plane cannot be reached.
type LosingGuard struct {
	*capacity.LocalGuard
	grants      atomic.Int64
	mu          sync.Mutex
	slots       []*LosableSlot
	unavailable bool
}

// NewLosingGuard is a LosingGuard that grants what a LocalGuard would.
func NewLosingGuard() *LosingGuard { return &LosingGuard{LocalGuard: capacity.NewLocalGuard()} }

func (g *LosingGuard) Acquire(ctx context.Context, cluster string, limit int) (capacity.Slot, error) {
	g.mu.Lock()
	down := g.unavailable
	g.mu.Unlock()
	if down {
		return nil, fmt.Errorf("%w: Post \"http://control-plane.internal:9000/worker/capacity\": connection refused", capacity.ErrUnavailable)
	}
	s, err := g.LocalGuard.Acquire(ctx, cluster, limit)
	if err != nil {
		return nil, err
	}
	gen := g.grants.Add(1)
	ls := &LosableSlot{Slot: s, lease: capacity.Lease{ID: capacity.LeaseID(cluster, gen), Cluster: cluster, Generation: gen}}
	g.mu.Lock()
	g.slots = append(g.slots, ls)
	g.mu.Unlock()
	return ls, nil
}

// SetUnavailable makes every Acquire fail with capacity.ErrUnavailable (down) or grant again.
func (g *LosingGuard) SetUnavailable(down bool) {
	g.mu.Lock()
	g.unavailable = down
	g.mu.Unlock()
}

// Grants is how many slots the guard granted.
func (g *LosingGuard) Grants() int64 { return g.grants.Load() }

// Slots are the slots granted so far, in order.
func (g *LosingGuard) Slots() []*LosableSlot {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*LosableSlot(nil), g.slots...)
}

// LoseAll loses every slot granted so far.
func (g *LosingGuard) LoseAll() {
	for _, s := range g.Slots() {
		s.Lose()
	}
}

// LosableSlot is a slot of a LosingGuard's. Its lease is named as a worker's are, its
// generation the guard's count of grants.
type LosableSlot struct {
	capacity.Slot
	lease  capacity.Lease
	mu     sync.Mutex
	lost   bool
	onLost []func()
}

// Lease is the slot's lease, as a worker's slot tells it.
func (s *LosableSlot) Lease() capacity.Lease { return s.lease }

func (s *LosableSlot) Lost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// OnLost registers fn to run when the slot is lost; at once if it already is.
func (s *LosableSlot) OnLost(fn func()) {
	s.mu.Lock()
	lost := s.lost
	if !lost {
		s.onLost = append(s.onLost, fn)
	}
	s.mu.Unlock()
	if lost {
		fn()
	}
}

// Lose loses the slot, once: what was registered with OnLost runs.
func (s *LosableSlot) Lose() { s.LoseLater()() }

// LoseLater loses the slot, once, as the lease guard's keeper does: it marks the slot lost and
// takes what was registered with OnLost under its lock, and runs that after letting go of it,
// by when the slot's query may have ended. The returned run is that later call, for a test to
// make when it likes.
func (s *LosableSlot) LoseLater() (run func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost {
		return func() {}
	}
	s.lost = true
	fns := s.onLost
	return func() {
		for _, fn := range fns {
			fn()
		}
	}
}

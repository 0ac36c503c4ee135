package capacity

import (
	"context"
	"fmt"
	"sync"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
)

// FleetKeeper is a CapacityStore that keeps the id of the fleet it serves: every control-plane
// replica on the store reads the same id, and another fleet (another lease store) has another.
type FleetKeeper interface {
	// FleetID returns the store's fleet id, keeping candidate as that id when it has none yet.
	FleetID(ctx context.Context, candidate string) (string, error)
}

// Fleet is a control plane's fleet id, read from its lease store (FleetKeeper) the first time
// it is needed and kept. Leases granted through the control plane carry it (Lease.Fleet), and
// so do their engine tags.
type Fleet struct {
	store CapacityStore
	e     env.Env

	mu sync.Mutex
	id string
}

// NewFleet returns the fleet id of store; a store that keeps none is given one drawn from e's
// random source (seeded in the simulator).
func NewFleet(store CapacityStore, e env.Env) *Fleet { return &Fleet{store: store, e: e} }

// ID is the fleet id, or "" when the store keeps none or cannot be read now (logged): leases
// granted meanwhile have the earlier tags, which the fence stops too (FenceTags).
func (f *Fleet) ID(ctx context.Context) string {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	id := f.id
	f.mu.Unlock()
	k, ok := f.store.(FleetKeeper)
	if id != "" || !ok {
		return id
	}
	id, err := k.FleetID(ctx, fmt.Sprintf("%016x", f.e.Rand().Uint64()))
	if err != nil {
		f.e.Logger().Warn("capacity: reading the fleet id failed; leases are tagged without it until it is read", "err", redact.Error(err))
		return ""
	}
	f.mu.Lock()
	f.id = id
	f.mu.Unlock()
	return id
}

// FleetID implements FleetKeeper: the first candidate is the id for good.
func (m *Memory) FleetID(_ context.Context, candidate string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fleet == "" {
		m.fleet = candidate
	}
	return m.fleet, nil
}

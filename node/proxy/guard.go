package proxy

import (
	"github.com/queryflux/queryflux/internal/capacity"
)

// Guard hands out capacity slots per cluster (internal/capacity): a capacity.LocalGuard for the
// standalone proxy, a capacity.LeaseGuard for a worker. Acquire answers at once with a slot or
// ErrNoSlot; the core does the queueing.
type Guard = capacity.Guard

// Slot is one running query's claim on a cluster. The core releases it exactly once, and
// cancels the query if the guard reports the slot lost (self-fencing).
type Slot = capacity.Slot

// ErrNoSlot is the guard's answer when the cluster has no free slot right now: the core then
// tries the next member, and queues when none has one.
var ErrNoSlot = capacity.ErrAtCapacity

// NewLocalGuard returns an in-process guard (the default when Options.Guard is nil).
func NewLocalGuard() *capacity.LocalGuard { return capacity.NewLocalGuard() }

package proxy

import (
	"context"

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

// NewLocalGuard returns an in-process guard.
func NewLocalGuard() *capacity.LocalGuard { return capacity.NewLocalGuard() }

// coreCount is the guard of a core given none (the standalone proxy): what a LocalGuard counts
// per cluster is the core's own running count, which the core keeps anyway. Acquire takes a slot
// of that count (an atomic, takeCounted), and every slot is the one countedSlot, which Admission's
// release counts down: a query then pays no lock and map of a guard of its own, and no
// allocation for its slot (a transaction pool's every transaction takes one).
type coreCount struct{ c *Core }

var (
	_ Guard              = coreCount{}
	_ capacity.AtOnce    = coreCount{}
	_ capacity.Unlosable = countedSlot{}
)

// Acquire implements Guard, as LocalGuard does, on the core's running count.
func (g coreCount) Acquire(ctx context.Context, cluster string, limit int) (Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := g.c
	c.mu.Lock()
	n := c.runningOf(cluster)
	c.mu.Unlock()
	if !takeCounted(n, limit) {
		return nil, ErrNoSlot
	}
	return countedSlot{}, nil
}

// AtOnce implements capacity.AtOnce: it only counts.
func (coreCount) AtOnce() bool { return true }

// countedSlot is a slot of coreCount: counted in the core's running count (tryMembers leaves it
// there, release takes it off), never lost.
type countedSlot struct{}

func (countedSlot) Release()      {}
func (countedSlot) Lost() bool    { return false }
func (countedSlot) OnLost(func()) {}
func (countedSlot) NeverLost()    {}

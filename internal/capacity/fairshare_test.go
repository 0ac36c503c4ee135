package capacity_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
)

// TestFreedSlotGoesToTheWaitingWorker: in retry mode a slot freed by a worker that holds more
// leases goes to the worker that waits for one holding fewer, even though the freeing worker
// asks first (its own release wakes its queue), also when the two ask different control-plane
// replicas sharing the store; once nobody waits, anyone may take it.
func TestFreedSlotGoesToTheWaitingWorker(t *testing.T) {
	m := capacity.NewMemory()
	capacitytest.FreedSlotGoesToWaiterAcrossReplicas(t, m, m)
}

func TestWaitingRecordIsBounded(t *testing.T) {
	capacitytest.WaitingRecordIsBounded(t, capacity.NewMemory())
}

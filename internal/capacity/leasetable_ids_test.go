package capacity

import (
	"fmt"
	"slices"
	"testing"
)

// A release takes its slot out of the id list in place, unless sortedIDs lent the list out
// (the keeper may be ranging over it): then the lent list stays as it was and the table goes
// on with a new one, which later releases again write in place.
func TestReleaseLeavesALentIDListAlone(t *testing.T) {
	tb := newLeaseTable(tableConfig{})
	var slots []*slotState
	for i := range 4 {
		slots = append(slots, tb.addSlot(new(slotState), &heldLease{lease: Lease{ID: fmt.Sprint("l", i), Cluster: "c"}}, 0))
	}
	lent := tb.sortedIDs()
	want := slices.Clone(lent)
	tb.release(slots[1], t0)
	if !slices.Equal(lent, want) {
		t.Fatalf("a release wrote the lent id list: %v, want %v", lent, want)
	}
	if got := tb.ids; !slices.Equal(got, []uint64{want[0], want[2], want[3]}) {
		t.Fatalf("ids after a release %v", got)
	}
	private := &tb.ids[0]
	tb.release(slots[3], t0)
	if got := tb.ids; !slices.Equal(got, []uint64{want[0], want[2]}) || &tb.ids[0] != private {
		t.Fatalf("a release of an id list nobody was lent made a new one (%v)", got)
	}
}

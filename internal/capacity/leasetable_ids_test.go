package capacity

import (
	"fmt"
	"slices"
	"testing"
)

// A release takes its slot out of the live list in place, unless liveSlots lent the list out
// (the keeper may be ranging over it): then the lent list stays as it was and the table goes
// on with a new one, which later releases again write in place.
func TestReleaseLeavesALentLiveListAlone(t *testing.T) {
	tb := newLeaseTable(tableConfig{})
	var slots []*slotState
	for i := range 4 {
		slots = append(slots, tb.addSlot(new(slotState), &heldLease{lease: Lease{ID: fmt.Sprint("l", i), Cluster: "c"}}, 0))
	}
	lent := tb.liveSlots()
	want := slices.Clone(lent)
	tb.release(slots[1], t0)
	if !slices.Equal(lent, want) {
		t.Fatalf("a release wrote the lent live list: %v, want %v", idsOf(lent), idsOf(want))
	}
	if got := tb.live; !slices.Equal(got, []*slotState{want[0], want[2], want[3]}) {
		t.Fatalf("live after a release %v", idsOf(got))
	}
	private := &tb.live[0]
	tb.release(slots[3], t0)
	if got := tb.live; !slices.Equal(got, []*slotState{want[0], want[2]}) || &tb.live[0] != private {
		t.Fatalf("a release of a live list nobody was lent made a new one (%v)", idsOf(got))
	}
}

// liveIndex finds every live slot, and no released one, whatever was released in between.
func TestLiveIndexFindsTheLiveSlots(t *testing.T) {
	tb := newLeaseTable(tableConfig{})
	var slots []*slotState
	for i := range 9 {
		slots = append(slots, tb.addSlot(new(slotState), &heldLease{lease: Lease{ID: fmt.Sprint("l", i), Cluster: "c"}}, 0))
	}
	for _, gone := range []int{4, 0, 8, 5} {
		tb.release(slots[gone], t0)
		for _, s := range slots {
			i, ok := tb.liveIndex(s.id)
			if live := !s.released; ok != live || (ok && tb.live[i] != s) {
				t.Fatalf("after releasing slot %d: liveIndex(%d) = %d, %v; live %v", slots[gone].id, s.id, i, ok, idsOf(tb.live))
			}
		}
	}
}

func idsOf(ss []*slotState) []uint64 {
	ids := make([]uint64, len(ss))
	for i, s := range ss {
		ids[i] = s.id
	}
	return ids
}

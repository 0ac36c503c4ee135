package history

import (
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// The uplink's ring against a slice: pushes (the oldest dropped when full), pops of the oldest
// n (whole batches, across the ring's wrap) and batches put back at the front keep the same
// entries in the same order, and the ring keeps no record it gave out.
func TestRingIsAQueue(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := newRing(rapid.IntRange(1, 9).Draw(rt, "capacity"))
		var model []string
		next := 0
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				id := strconv.Itoa(next)
				next++
				old, full := r.push(&Record{QueryID: id}, "")
				if len(model) == len(r.buf) {
					if !full || old != model[0] {
						rt.Fatalf("push into a full ring dropped %q (%v), want %q", old, full, model[0])
					}
					model = model[1:]
				} else if full {
					rt.Fatalf("push into a ring of %d/%d dropped %q", len(model), len(r.buf), old)
				}
				model = append(model, id)
			case 1:
				n := rapid.IntRange(0, 10).Draw(rt, "pop")
				got := idsOf(r.popFrontInto([]entry{{rec: Record{QueryID: "before"}}}, n)[1:])
				want := model[:min(n, len(model))]
				if !slices.Equal(got, want) {
					rt.Fatalf("popped %q, want %q", got, want)
				}
				model = model[len(want):]
				for i, e := range r.buf {
					if e.rec.QueryID != "" && !slices.Contains(model, e.rec.QueryID) {
						rt.Fatalf("slot %d still holds %q, given out", i, e.rec.QueryID)
					}
				}
			case 2:
				k := rapid.IntRange(0, 3).Draw(rt, "back")
				var back []entry
				var ids []string
				for range k {
					id := strconv.Itoa(next)
					next++
					back = append(back, entry{rec: Record{QueryID: id}})
					ids = append(ids, id)
				}
				dropped := r.pushFront(back)
				fit := min(k, len(r.buf)-len(model))
				if len(dropped) != k-fit {
					rt.Fatalf("pushFront of %d with room for %d dropped %d", k, fit, len(dropped))
				}
				model = append(slices.Clone(ids[k-fit:]), model...)
			}
			if r.len() != len(model) {
				rt.Fatalf("ring holds %d, want %d", r.len(), len(model))
			}
			var got []string
			for i := range r.len() {
				got = append(got, r.buf[(r.head+i)%len(r.buf)].rec.QueryID)
			}
			if !slices.Equal(got, model) && (len(got) > 0 || len(model) > 0) {
				rt.Fatalf("ring holds %q, want %q", got, model)
			}
		}
	})
}

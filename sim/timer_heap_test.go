package sim

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The timer heap (inline keys, lazy removal, compaction, reused timers) pops exactly the live
// timers, in (at, seq) order, whatever the sequence of pushes, removals and reuses.
func TestTimerHeapPopsLiveTimersInOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h timerHeap
		var seq uint64
		var all []*timer
		live := map[*timer]bool{}
		for range rapid.IntRange(0, 400).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op < 5 || len(all) == 0: // push a new timer, or re-arm an old one (a task's reused timer)
				var tm *timer
				if len(all) > 0 && op == 4 {
					tm = all[rapid.IntRange(0, len(all)-1).Draw(t, "reuse")]
					if live[tm] {
						h.remove(tm)
					}
				} else {
					tm = &timer{}
					all = append(all, tm)
				}
				seq++
				*tm = timer{at: time.Duration(rapid.IntRange(0, 50).Draw(t, "at")), seq: seq}
				h.push(tm)
				live[tm] = true
			case op < 8:
				tm := all[rapid.IntRange(0, len(all)-1).Draw(t, "remove")]
				h.remove(tm)
				delete(live, tm)
			default:
				e := h.first()
				if e == nil {
					if len(live) != 0 {
						t.Fatalf("heap empty with %d live timers", len(live))
					}
					continue
				}
				want := earliest(live)
				got := h.pop()
				if got != want {
					t.Fatalf("popped (%v, %d), want (%v, %d)", got.at, got.seq, want.at, want.seq)
				}
				delete(live, got)
			}
		}
		var popped []*timer
		for h.first() != nil {
			popped = append(popped, h.pop())
		}
		if len(popped) != len(live) {
			t.Fatalf("drained %d timers, %d live", len(popped), len(live))
		}
		if !slices.IsSortedFunc(popped, func(a, b *timer) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return int(a.seq) - int(b.seq)
		}) {
			t.Fatalf("drained out of order")
		}
	})
}

func earliest(live map[*timer]bool) *timer {
	var best *timer
	for tm := range live {
		if best == nil || tm.at < best.at || (tm.at == best.at && tm.seq < best.seq) {
			best = tm
		}
	}
	return best
}

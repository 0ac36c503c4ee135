package history

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// The id table against a Go map: random sets, re-sets and deletes of keys from a small pool
// (so they repeat) on tables with short probe bounds (so the overflow map and the probe bound
// are exercised) must answer every get as the map does, hold as many ids, keep every entry
// within its probe bound of its home and reach it from there without an empty entry between.
// A delete that shifted an entry back past its home, or left a hole that cut a probe short,
// would lose ids; a set that probed past the bound would make them unreachable. The overflow
// map's filter (inOverflow) must count exactly its keys: one it missed would hide an id.
func TestIDTableIsAMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tab := newIDTable()
		tab.probeMax = rapid.IntRange(1, 6).Draw(rt, "probeMax")
		model := map[uint64]int32{}
		// Enough keys to fill and grow the table, and operations on them, from a seed: rapid's
		// own draws stay small, and these must crowd the table.
		rnd := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
		pool := make([]uint64, rapid.IntRange(100, 3000).Draw(rt, "keys"))
		for i := range pool {
			pool[i] = rnd.Uint64()
		}
		deletes := rapid.IntRange(1, 4).Draw(rt, "deletes") // in 8 operations
		for step := range 4 * len(pool) {
			k := pool[rnd.IntN(len(pool))]
			_, held, at := tab.where(k)
			switch {
			case rnd.IntN(8) < deletes:
				tab.del(k)
				delete(model, k)
			case held || rnd.IntN(3) == 0:
				tab.set(k, int32(step))
				model[k] = int32(step)
			case rnd.IntN(2) == 0:
				tab.add(k, int32(step)) // as the store adds an id it does not hold
				model[k] = int32(step)
			default: // as a full store does: another id forgotten, k put where its probe found
				gone := pool[rnd.IntN(len(pool))]
				if gone == k {
					hole := tab.del(gone)
					delete(model, gone)
					_, _, at = tab.where(k)
					tab.addAt(at, hole, k, int32(step))
				} else {
					tab.addAt(at, tab.del(gone), k, int32(step))
					delete(model, gone)
				}
				model[k] = int32(step)
			}
			if tab.len() != len(model) {
				rt.Fatalf("step %d: %d ids held, want %d", step, tab.len(), len(model))
			}
		}
		if len(tab.overflow) == 0 && tab.probeMax == 1 && len(model) > 200 {
			rt.Fatalf("%d ids, none in the overflow map with a probe bound of 1", len(model))
		}
		var counts [64]int32 // the overflow map's keys by their low six bits, as where's filter counts them
		for k := range tab.overflow {
			counts[k&63]++
		}
		if counts != tab.inOverflow {
			rt.Fatalf("the overflow filter counts %v, the map holds %v", tab.inOverflow, counts)
		}
		for _, k := range pool {
			slot, held := tab.get(k)
			want, wantHeld := model[k]
			if held != wantHeld || slot != want {
				rt.Fatalf("get(%x) = %d, %v; want %d, %v", k, slot, held, want, wantHeld)
			}
		}
		mask := len(tab.entries) - 1
		for i, e := range tab.entries {
			if e.slot == 0 {
				continue
			}
			home := tab.home(e.key)
			if int(e.home) != home {
				rt.Fatalf("entry %d keeps home %d, its key's is %d", i, e.home, home)
			}
			if d := (i - home) & mask; d >= tab.probeMax {
				rt.Fatalf("entry %d is %d from its home %d, bound %d", i, d, home, tab.probeMax)
			}
			for j := home; j != i; j = (j + 1) & mask {
				if tab.entries[j].slot == 0 {
					rt.Fatalf("entry %d: empty entry %d on its probe from %d", i, j, home)
				}
			}
		}
	})
}

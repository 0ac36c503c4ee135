package capacity

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// sortedKeys lists a map's keys in order, as slices.Sorted(maps.Keys(m)), in or past the buffer
// it is given.
func TestSortedKeysIsSortedMapKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOfN(rapid.StringMatching(`[a-e]{0,3}`), rapid.Int(), 0, 20).Draw(t, "m")
		var buf [clusterKeysOnStack]string
		n := rapid.IntRange(0, clusterKeysOnStack).Draw(t, "buffered")
		got := sortedKeys(buf[:n], m)
		if want := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
			t.Fatalf("sortedKeys = %q, want %q", got, want)
		}
	})
}

// The lease keeper's passes allocate nothing for the few clusters a worker holds leases on.
func TestSortedKeysOfAFewClustersAllocatesNothing(t *testing.T) {
	m := map[string]*clusterCheck{"c1": nil, "c2": nil, "c3": nil, "c4": nil}
	bad := false
	allocs := testing.AllocsPerRun(100, func() {
		var buf [clusterKeysOnStack]string
		keys := sortedKeys(buf[:0], m)
		bad = bad || len(keys) != 4 || keys[0] != "c1" || keys[3] != "c4"
	})
	if bad {
		t.Fatal("sortedKeys did not list c1..c4 in order")
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per call, want none", allocs)
	}
}

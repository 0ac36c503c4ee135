package bad

import (
	"maps"
	"slices"
)

// The maps package's iterators have the map's random order.
func MapSeqs(m map[string]int) []string {
	for k := range maps.Keys(m) { // want "maps.Keys"
		_ = k
	}
	for v := range maps.Values(m) { // want "maps.Values"
		_ = v
	}
	for k, v := range maps.All(m) { // want "maps.All"
		_, _ = k, v
	}
	keys := slices.Collect(maps.Keys(m)) // want "maps.Keys"
	seq := maps.Keys(m)                  // want "maps.Keys"
	_ = seq
	return keys
}

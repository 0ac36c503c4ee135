// Package good uses time values and sorted keys only.
package good

import (
	"slices"
	"time"
)

func Keys(m map[string]time.Duration) []string {
	keys := make([]string, 0, len(m))
	for k := range m { //determinism:ok collecting keys to sort
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func Later(t time.Time) time.Time { return t.Add(time.Second) }

func SortedKeys(m map[string]int) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

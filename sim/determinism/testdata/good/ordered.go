package good

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
)

// Orders that are fixed, and lookalikes that are harmless.
func Ordered(m map[string]int, rt http.RoundTripper, v reflect.Value) []string {
	for k := range slices.Values(slices.Sorted(maps.Keys(m))) {
		_ = k
	}
	vals := slices.Collect(maps.Values(m))
	slices.Sort(vals)
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	var collected []string
	for k := range maps.Keys(m) {
		collected = append(collected, k)
	}
	slices.Sort(collected)
	copied := maps.Collect(maps.All(m))
	_ = copied
	_ = &http.Client{Transport: rt}
	_ = v.Len()
	_ = fmt.Sprintf("100%% %v", v)
	return keys
}

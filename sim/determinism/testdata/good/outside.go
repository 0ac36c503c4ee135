package good

import "github.com/queryflux/queryflux/sim/determinism/testdata/outside"

// What of an outside package touches nothing: a clean function, a constant, a type named in a
// signature, an interface's method.
func Outside(c outside.Clock, t *outside.Ticker) int {
	_ = c.Now()
	_ = t
	return outside.Clean(outside.Limit)
}

// CopyMap copies a map: the order of the copy does not matter.
func CopyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

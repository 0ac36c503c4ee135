package bad

// A map behind a type parameter is still a map.
func GenericRange[M ~map[K]V, K comparable, V any](m M) []K {
	var out []K
	for k := range m { // want "range over a map"
		out = append(out, k)
	}
	return out
}

type counts interface {
	~map[string]int
}

func ConstraintRange[M interface{ counts }](m M) int {
	n := 0
	for range m { // want "range over a map"
		n++
	}
	return n
}

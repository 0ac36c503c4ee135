//go:build linux

package relayloop

// fdTable maps file descriptors to values in a slice indexed by the descriptor: the kernel
// hands out the lowest free number, so the slice stays about as long as the process has
// descriptors open. A Go map cost a hash and, mostly, a cache miss at every event the loop
// handles and at every plug and unplug of a socket (0.6 us of the loop's CPU per transaction of
// a pooled PostgreSQL client, RESULTS.md), a slice one load.
type fdTable[T comparable] struct{ s []T }

// get is fd's value, the zero value when it has none.
func (t *fdTable[T]) get(fd int) T {
	if fd >= 0 && fd < len(t.s) {
		return t.s[fd]
	}
	var zero T
	return zero
}

// set gives fd the value v (fd >= 0).
func (t *fdTable[T]) set(fd int, v T) {
	if fd >= len(t.s) {
		t.s = append(t.s, make([]T, fd+1-len(t.s))...)
	}
	t.s[fd] = v
}

// del takes fd's value away.
func (t *fdTable[T]) del(fd int) {
	if fd >= 0 && fd < len(t.s) {
		var zero T
		t.s[fd] = zero
	}
}

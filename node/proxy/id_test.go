package proxy

import (
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// Query ids keep their format (16 lower-case hex digits, as fmt's %016x), so a simulator
// run's trace is the same as before.
func TestHex16IsSprintf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Uint64().Draw(t, "v")
		if got, want := hex16(v), fmt.Sprintf("%016x", v); got != want {
			t.Fatalf("hex16(%d) = %q, want %q", v, got, want)
		}
	})
}

// TestIDArenaIdsAreHex16AndStay: the arena's ids are hex16's text, and an id handed out keeps
// its text while more are made (across blocks, from goroutines at once).
func TestIDArenaIdsAreHex16AndStay(t *testing.T) {
	var a idArena
	const n = 3*idBlockIDs + 7
	var wg sync.WaitGroup
	ids := make([][]string, 4)
	for g := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				ids[g] = append(ids[g], a.hex16(uint64(g)<<32|uint64(i)*0x9e3779b97f4a7c15>>32))
			}
		}()
	}
	wg.Wait()
	for g := range ids {
		for i, id := range ids[g] {
			if want := hex16(uint64(g)<<32 | uint64(i)*0x9e3779b97f4a7c15>>32); id != want {
				t.Fatalf("goroutine %d's id %d is %q, want %q", g, i, id, want)
			}
		}
	}
}

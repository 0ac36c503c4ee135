package proxy

import (
	"fmt"
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

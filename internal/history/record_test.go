package history

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestUTCMicrosIsTruncate: utcMicros is what UTC().Truncate(time.Microsecond) makes of any time,
// before the year 1 too, in any zone, with or without a monotonic reading.
func TestUTCMicrosIsTruncate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := time.Unix(rapid.Int64Range(-70e9, 70e9).Draw(t, "sec"), rapid.Int64Range(0, 1e9-1).Draw(t, "nsec"))
		at = at.In(time.FixedZone("z", rapid.IntRange(-50400, 50400).Draw(t, "offset")))
		if rapid.Bool().Draw(t, "monotonic") {
			now := time.Now()
			at = now.Add(at.Sub(now))
		}
		want := at.UTC().Truncate(time.Microsecond)
		if got := utcMicros(at); got != want { // ==: the same instant, zone and no monotonic reading
			t.Fatalf("utcMicros(%v) = %v, want %v", at, got, want)
		}
	})
}

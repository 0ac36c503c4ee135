package capacity

import (
	"math"
	"testing"
	"time"
)

// TestMillisPastADurationIsTheLongest: a worker's ttlMillis or waitMillis too large for a
// Duration is the longest one (the configured bound then applies), never a product wrapped
// round: 18446744073710 ms times 10^6 passes 2^64 by 448384 ns, and such a TTL was a lease of
// 0.45 ms.
func TestMillisPastADurationIsTheLongest(t *testing.T) {
	for _, ms := range []int64{math.MaxInt64/int64(time.Millisecond) + 1, 18446744073709, 18446744073710, 1 << 50, math.MaxInt64} {
		if d := millis(ms); d != math.MaxInt64 {
			t.Errorf("millis(%d) = %v, want the longest Duration", ms, d)
		}
	}
	for _, ms := range []int64{0, 1, 30000, math.MaxInt64 / int64(time.Millisecond)} {
		if d := millis(ms); d != time.Duration(ms)*time.Millisecond {
			t.Errorf("millis(%d) = %v", ms, d)
		}
	}
}

package workerapi

import (
	"testing"
	"time"
)

// TestParseRetryAfter: delay-seconds and HTTP dates (against the caller's clock) read as the
// wait, at most RetryAfterMax; anything else (garbled, negative, a past date, a float, a huge
// number) is 0 or the cap, never more.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"7", 7 * time.Second}, {" 30 ", 30 * time.Second}, {"0", 0}, {"60", time.Minute},
		{"3600", time.Minute}, {"99999999999999999999999", 0}, {"18446744073709551615", time.Minute},
		{"-5", 0}, {"1e3", 0}, {"12abc", 0}, {"soon", 0},
		{"Fri, 04 Dec 2026 05:00:45 GMT", 45 * time.Second}, {"Fri, 04 Dec 2026 06:00:00 GMT", time.Minute},
		{"Fri, 04 Dec 2026 04:59:00 GMT", 0},
	} {
		if got := ParseRetryAfter(c.v, now); got != c.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// Package canontest draws the values of the rapid tests that hold a canonical codec
// (workerapi.CanonWriter and CanonReader, the heartbeat's and the capacity acquire's codecs) to
// encoding/json byte for byte: texts it writes as they are and texts it escapes, and times it
// can carry and times it cannot.
//
// determinism: outside the simulator (test helper)
package canontest

import (
	"time"

	"pgregory.net/rapid"
)

// Text draws one of samples (the codec's own kinds of text, and escapes), plain ASCII of up
// to 16 name characters, or any string.
func Text(t *rapid.T, label string, samples ...string) string {
	return rapid.OneOf(
		rapid.SampledFrom(append([]string{"", "<b>&", "é", "\x00\n\"\\", "\u2028"}, samples...)),
		rapid.StringMatching(`[a-z0-9._:/-]{0,16}`),
		rapid.String(),
	).Draw(t, label)
}

// Time draws the zero time, an instant in UTC to the nanosecond, one in a zone of its own
// offset, or one in a year encoding/json cannot carry.
func Time(t *rapid.T, label string) time.Time {
	switch rapid.IntRange(0, 3).Draw(t, label+"Kind") {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(rapid.Int64Range(-1e11, 1e11).Draw(t, label+"Sec"), rapid.Int64Range(0, 999_999_999).Draw(t, label+"Ns")).UTC()
	case 2:
		off := rapid.IntRange(-86399, 86399).Draw(t, label+"Off")
		return time.Unix(rapid.Int64Range(0, 4e9).Draw(t, label+"Sec"), 0).In(time.FixedZone("z", off))
	default:
		return time.Unix(rapid.Int64Range(-1e12, 1e12).Draw(t, label+"Sec"), 0) // years json cannot carry
	}
}

package sim

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/cespare/xxhash/v2"
	"pgregory.net/rapid"
)

// The trace hash is the digest of every event's bytes written as the event happens (what the
// recorded trace hashes were made of), however the events are batched before the digest sees
// them, for events of any size and the hash read at any point.
func TestTraceHashIsEveryEventsDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &Sim{hash: xxhash.New()}
		want := xxhash.New()
		for range rapid.IntRange(0, 600).Draw(t, "events") {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1:
				vals := rapid.SliceOfN(rapid.Uint64(), 0, 4).Draw(t, "vals")
				s.mix(evRun, vals...)
				b := []byte{evRun}
				for _, v := range vals {
					b = binary.LittleEndian.AppendUint64(b, v)
				}
				_, _ = want.Write(b)
			case 2, 3:
				strs := rapid.SliceOfN(rapid.StringN(0, 3000, -1), 0, 3).Draw(t, "strs")
				s.mixStrings(evRecord, strs...)
				b := []byte{evRecord}
				for _, str := range strs {
					b = binary.LittleEndian.AppendUint32(b, uint32(len(str)))
					b = append(b, str...)
				}
				_, _ = want.Write(b)
			default:
				if got := s.TraceHash(); got != hexOf(want.Sum64()) {
					t.Fatalf("trace hash %s, want %s", got, hexOf(want.Sum64()))
				}
			}
		}
		if got := s.TraceHash(); got != hexOf(want.Sum64()) {
			t.Fatalf("trace hash at the end %s, want %s", got, hexOf(want.Sum64()))
		}
	})
}

func hexOf(h uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h)
	return hex.EncodeToString(b[:])
}

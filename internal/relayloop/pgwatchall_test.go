package relayloop_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/relayloop"
)

// A PG framer told to watch everything (an engine connection kept between transactions, whose
// every word is out of turn) watches every message type, the counted ones included, and counts
// none of them; told to stop, it frames as before.
func TestPGWatchAllWatchesEveryType(t *testing.T) {
	f := relayloop.PGWatching('Z')
	f.Counted['D'] = true
	msg := func(b byte) []byte { return []byte{b, 0, 0, 0, 4} }
	f.WatchAll = true
	for b := range 256 {
		if total, watch := f.Frame(msg(byte(b))); !watch || total != 5 {
			t.Fatalf("type %q: framed %d, watched %v, want 5 and watched", byte(b), total, watch)
		}
	}
	if f.Count != 0 {
		t.Fatalf("counted %d rows while watching everything", f.Count)
	}
	f.WatchAll = false
	if _, watch := f.Frame(msg('D')); watch || f.Count != 1 {
		t.Fatalf("a row after: watched %v, counted %d", watch, f.Count)
	}
	if _, watch := f.Frame(msg('Z')); !watch {
		t.Fatal("ReadyForQuery after: not watched")
	}
}

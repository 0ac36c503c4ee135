package relayloop

import "testing"

// TestMySQLSkip: the messages a Watch lets through with Skip stream unwatched whatever their
// size, are not counted (nor their continuations), and carry Seq along; after them short
// packets are watched again and long ones counted.
func TestMySQLSkip(t *testing.T) {
	f := &MySQL{WatchMax: 100}
	frame := func(n int, seq byte, wantWatch bool, wantCount, wantBytes int64) {
		t.Helper()
		total, watch := f.Frame([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq})
		if total != 4+n || watch != wantWatch || f.Count != wantCount || f.Bytes != wantBytes {
			t.Fatalf("a packet of %d (seq %d): total %d, watched %v, count %d, bytes %d; want %d, %v, %d, %d",
				n, seq, total, watch, f.Count, f.Bytes, 4+n, wantWatch, wantCount, wantBytes)
		}
		if !watch && f.Seq != seq {
			t.Fatalf("a packet of %d streamed through with seq %d, Seq is %d", n, seq, f.Seq)
		}
	}
	frame(1, 1, true, 0, 0) // a column count: watched
	f.Skip = 3              // its columns (one long, one continued) and their EOF
	frame(30, 2, false, 0, 0)
	frame(MySQLMaxPayload, 3, false, 0, 0)
	frame(5, 4, false, 0, 0) // the continuation
	frame(5, 5, false, 0, 0) // the EOF
	if f.Skip != 0 || f.Continues() {
		t.Fatalf("after the skipped messages: Skip %d, continues %v", f.Skip, f.Continues())
	}
	frame(10, 6, true, 0, 0) // a short row: watched again
	frame(500, 7, false, 1, 500)
	frame(MySQLMaxPayload, 8, false, 2, 500+MySQLMaxPayload)
	frame(7, 9, false, 2, 507+MySQLMaxPayload) // a counted message's continuation is counted
	frame(9, 10, true, 2, 507+MySQLMaxPayload)
}

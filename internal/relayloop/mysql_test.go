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

// TestMySQLRowsWatchOnlyTheirEnd: among a result's rows (Rows) only the packets that end them
// go to the Watch, an EOF (0xFE, shorter than 9) or an ERR; a short row not read whole yet is
// waited for (watched: framed again, whole); every other row is counted, whatever its size or
// first byte.
func TestMySQLRowsWatchOnlyTheirEnd(t *testing.T) {
	f := &MySQL{WatchMax: 100, Rows: true}
	var count, bytes int64
	for _, c := range []struct {
		name  string
		h     []byte
		watch bool
	}{
		{"a short row", []byte{3, 0, 0, 1, 2, 'a', 'b'}, false},
		{"a row of one NULL", []byte{1, 0, 0, 2, 0xfb}, false},
		{"a row led by an 8-byte length", append([]byte{20, 0, 0, 3, 0xfe}, make([]byte, 19)...), false},
		{"a long row led by 0xFF", []byte{0, 2, 0, 4, 0xff}, false},
		{"an EOF", []byte{5, 0, 0, 5, 0xfe, 0, 0, 2, 0}, true},
		{"an ERR", append([]byte{30, 0, 0, 6, 0xff, 0x28}, make([]byte, 28)...), true},
		{"a short row, its header alone read", []byte{7, 0, 0, 7}, true},
		{"a short row, read in part", []byte{7, 0, 0, 7, 1, 'a'}, true},
		{"a long row, its header alone read", []byte{0, 1, 0, 8}, false},
		{"an empty packet", []byte{0, 0, 0, 9, 0xfe}, true},
	} {
		n := int(c.h[0]) | int(c.h[1])<<8 | int(c.h[2])<<16
		total, watch := f.Frame(c.h)
		if !watch {
			count++
			bytes += int64(n)
		}
		if total != 4+n || watch != c.watch || f.Count != count || f.Bytes != bytes {
			t.Fatalf("%s: total %d, watched %v, count %d, bytes %d; want %d, %v, %d, %d",
				c.name, total, watch, f.Count, f.Bytes, 4+n, c.watch, count, bytes)
		}
	}
	f.Rows = false
	if _, watch := f.Frame([]byte{3, 0, 0, 9, 1, 2, 3}); !watch {
		t.Fatal("a short packet outside rows streamed through unwatched")
	}
}

// TestMySQLRunsFrameWholePacketsAtOnce: the packets read whole that Skip lets through, and the
// rows after them, are framed as one run each, up to the packet that ends the rows (watched)
// or one not read whole; Seq is the last one's, and a packet that continues is never in a run.
func TestMySQLRunsFrameWholePacketsAtOnce(t *testing.T) {
	packet := func(seq byte, payload ...byte) []byte {
		return append([]byte{byte(len(payload)), 0, 0, seq}, payload...)
	}
	var h []byte
	h = append(h, packet(2, make([]byte, 10)...)...) // a column definition
	h = append(h, packet(3, 0xfe, 0, 0, 2, 0)...)    // its EOF
	h = append(h, packet(4, 1, 'a')...)              // a row
	h = append(h, packet(5, 0xfb)...)                // a row
	h = append(h, packet(6, 0xfe, 0, 0, 2, 0)...)    // the rows' EOF
	h = append(h, packet(7, 2, 'b', 'c')[:5]...)     // read in part
	f := &MySQL{WatchMax: 100, Skip: 2, Rows: true}
	for _, want := range []struct {
		total  int
		watch  bool
		seq    byte
		skip   int
		counts int64
	}{
		{14 + 9, false, 3, 0, 0},
		{6 + 5, false, 5, 0, 2},
		{9, true, 5, 0, 2},
	} {
		total, watch := f.Frame(h)
		if total != want.total || watch != want.watch || f.Seq != want.seq || f.Skip != want.skip || f.Count != want.counts {
			t.Fatalf("at %v: total %d, watched %v, seq %d, skip %d, count %d; want %+v", h[:4], total, watch, f.Seq, f.Skip, f.Count, want)
		}
		h = h[total:]
	}
	if total, watch := f.Frame(h); total != 7 || !watch {
		t.Fatalf("a row read in part: total %d, watched %v; want 7, waited for", total, watch)
	}
	f = &MySQL{WatchMax: 100, Skip: 2}
	long := make([]byte, 4+MySQLMaxPayload) // read whole: still framed alone
	long[0], long[1], long[2], long[3] = 0xff, 0xff, 0xff, 1
	if total, watch := f.Frame(long); total != 4+MySQLMaxPayload || watch || !f.Continues() || f.Skip != 1 {
		t.Fatalf("a skipped packet that continues: total %d, watched %v, continues %v, skip %d", total, watch, f.Continues(), f.Skip)
	}
	f = &MySQL{WatchMax: 100, Rows: true}
	rows := append(append(packet(1, 1, 'a'), packet(2)...), packet(3, 1, 'b')...)
	if total, watch := f.Frame(rows); total != 6 || watch || f.Count != 1 {
		t.Fatalf("a row, then an empty packet: total %d, watched %v, count %d; want the row alone", total, watch, f.Count)
	}
}

package pgwire

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// TestTextArenaTextsKeepTheirBytes: every text the arena made is the bytes it was made from,
// whatever was carved after it and whatever became of the message buffer it was read from;
// a text longer than textInBlock is a string of its own.
func TestTextArenaTextsKeepTheirBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a textArena
		var texts, want []string
		buf := make([]byte, 0, 4*textInBlock) // the reused message buffer
		for range rapid.IntRange(1, 200).Draw(t, "texts") {
			n := rapid.IntRange(0, 2*textInBlock).Draw(t, "len")
			b := rapid.SliceOfN(rapid.Byte(), n, n).Draw(t, "text")
			buf = append(buf[:0], b...)
			s := a.string(buf)
			texts, want = append(texts, s), append(want, string(b))
			clear(buf)
		}
		for i := range texts {
			if texts[i] != want[i] {
				t.Fatalf("text %d is %q, was made from %q", i, texts[i], want[i])
			}
		}
	})
}

// TestTextArenaAllocatesABlockForManyTexts: pgbench's statement costs an allocation every
// textBlock/len bytes, not one a statement.
func TestTextArenaAllocatesABlockForManyTexts(t *testing.T) {
	var a textArena
	msg := []byte("SELECT abalance FROM pgbench_accounts WHERE aid = 1234567;")
	if n := testing.AllocsPerRun(1000, func() {
		msg[len(msg)-2]++
		if s := a.string(msg); !bytes.Equal([]byte(s), msg) {
			t.Fatalf("%q", s)
		}
	}); n > 1.0/20 {
		t.Fatalf("%.3f allocations a text", n)
	}
}

package sqltok

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// containsFoldByByte is ContainsFold read byte by byte, the definition it is held to.
func containsFoldByByte(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if c := s[i]; (c == word[0] || c|0x20 == word[0] && c >= 'A') && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// TestContainsFoldAsByByte: ContainsFold agrees with the byte-by-byte scan on texts made of the
// word's pieces in both cases, look-alikes and other bytes.
func TestContainsFoldAsByByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.SampledFrom([]string{"pg_", "select", "query", "x", "lock", "set_", "(", "{1", "jsonb"}).Draw(t, "word")
		pieces := []string{word, strings.ToUpper(word), word[:1], strings.ToUpper(word[:1]), word[1:], "[", "@", "_", " ", "é", "K", "xX", "\x00"}
		var b strings.Builder
		for _, p := range rapid.SliceOf(rapid.SampledFrom(pieces)).Draw(t, "pieces") {
			b.WriteString(p)
		}
		s := b.String()
		if got, want := ContainsFold(s, word), containsFoldByByte(s, word); got != want {
			t.Fatalf("ContainsFold(%q, %q) = %v, the byte-by-byte scan says %v", s, word, got, want)
		}
	})
}

// TestContainsFoldLinear: a text of one case of the word's first byte, the other case absent,
// is scanned once, not once per candidate (4 MiB: milliseconds, not minutes).
func TestContainsFoldLinear(t *testing.T) {
	s := strings.Repeat("s", 4<<20)
	done := make(chan bool)
	go func() { done <- !ContainsFold(s, "select") && ContainsFold(s+"SELECT", "select") }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("wrong answer on 4 MiB of s")
		}
	case <-time.After(20 * time.Second): // linear: milliseconds even on a loaded machine
		t.Fatal("4 MiB of s not scanned within 20 s: the scan is not linear")
	}
}

// TestTokenizeAllocatesForItsTokens: a 4 MiB statement of three tokens (a word, a number, a
// comment) allocates for its tokens, not for a token every 4 bytes of its text.
func TestTokenizeAllocatesForItsTokens(t *testing.T) {
	sql := "select 1 /* " + strings.Repeat("x", 4<<20) + " */"
	for _, tokenize := range []func(string, Dialect) []Token{Tokenize, TokenizeOtherEscapes} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		toks := tokenize(sql, Postgres)
		runtime.ReadMemStats(&after)
		if len(toks) != 5 { // select, space, 1, space, the comment
			t.Fatalf("%d tokens, want 5", len(toks))
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("tokenizing a 4 MiB statement of %d tokens allocated %d bytes", len(toks), got)
		}
	}
}

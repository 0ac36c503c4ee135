package workerapi

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// intern is string(b) whatever was interned before (other words in the same slot, longer
// ones, empty ones), and a word interned again is the string interned before: one allocation
// for the same bytes, not one per message.
func TestInternIsTheStringOfItsBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		words := rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 0, internMax+8), 1, 50).Draw(t, "words")
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(words)-1), 1, 200).Draw(t, "order") {
			if got := intern(words[i]); got != string(words[i]) {
				t.Fatalf("intern(%q) = %q", words[i], got)
			}
		}
	})
	b := []byte("controlPlane")
	first := intern(b)
	again := intern([]byte("controlPlane"))
	if unsafe.StringData(first) != unsafe.StringData(again) {
		t.Fatal("the same word interned twice gave two strings, want the one interned first")
	}
	b[0] = 'X' // the caller's buffer is reused for the next message: the word must not change
	if first != "controlPlane" || intern([]byte("controlPlane")) != "controlPlane" {
		t.Fatal("an interned word changed with the buffer it was read from")
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = intern([]byte("controlPlane")) }); allocs != 0 {
		t.Fatalf("%v allocations to intern a word interned before, want none", allocs)
	}
}

// Decoders of concurrent requests share the table: each gets its own bytes back (run it with
// -race).
func TestInternConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				w := fmt.Sprintf("w%d-%d", g, i%300)
				if got := intern([]byte(w)); got != w {
					t.Errorf("intern(%q) = %q", w, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

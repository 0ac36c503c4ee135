package sqltok

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestShapedTextVouchesForItsStringOnly: ShapedText.Of gives the Shape for the very string it
// was made with, and nil for an equal copy, another text of its length, a part of it, the
// empty text, or when it knows no Shape.
func TestShapedTextVouchesForItsStringOnly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`[a-z0-9 ]{1,40}`).Draw(t, "text")
		s := new(Shape)
		st := Shaped(text, s)
		if st.Of(text) != s {
			t.Fatalf("%q: not vouched for", text)
		}
		other := []string{strings.Clone(text), text[:len(text)-1], "", strings.Repeat("x", len(text))}
		if k := rapid.IntRange(0, len(text)-1).Draw(t, "k"); k > 0 {
			other = append(other, text[k:], text[:k]+text[k:]) // (the join is a new string)
		}
		for _, o := range other {
			if st.Of(o) != nil {
				t.Fatalf("%q vouched for by the shape of %q", o, text)
			}
		}
		if Shaped(text, nil).Of(text) != nil || (ShapedText{}).Of("") != nil {
			t.Fatal("a shape from nothing")
		}
	})
}

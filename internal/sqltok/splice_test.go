package sqltok

import "testing"

func TestSpliceMakesEachEditInPlace(t *testing.T) {
	text := "select a from t order by a"
	got := Splice(text, []Edit{
		{From: 7, To: 8, Text: "b AS a"}, // a replacement
		{From: 14, To: 14, Text: "s."},   // an insertion
		{From: 15, To: 26, Text: ""},     // a deletion reaching the end
	})
	if want := "select b AS a from s.t"; got != want {
		t.Fatalf("Splice: %q, want %q", got, want)
	}
	if got := Splice(text, nil); got != text {
		t.Fatalf("Splice without edits: %q", got)
	}
}

package pgengine

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// TestColumnNamesNamedInAsScanningEachName: columnNames.namedIn answers as scanning the
// statement once per name did, word by word: true when a word of the statement is one of the
// names in any case (a long one, one next to quotes, dots or operators too), or it contains a
// name that is not a word, or a name has a quote in it; false otherwise.
func TestColumnNamesNamedInAsScanningEachName(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.StringMatching(`[A-Za-z_][A-Za-z0-9_$]{0,70}`)
		names := rapid.SliceOfN(rapid.OneOf(word, rapid.SampledFrom([]string{"two words", "é_ok", "q`x", "Ok", "ID"})), 0, 8).Draw(t, "names")
		var b strings.Builder
		for range rapid.IntRange(0, 12).Draw(t, "parts") {
			w := word.Draw(t, "word")
			if len(names) > 0 && rapid.Bool().Draw(t, "a name") {
				w = names[rapid.IntRange(0, len(names)-1).Draw(t, "which")]
				if rapid.Bool().Draw(t, "upper") {
					w = strings.ToUpper(w)
				}
			}
			b.WriteString(w + rapid.SampledFrom([]string{" ", ".", "\"", "(", " = ", ",", "é", "1"}).Draw(t, "sep"))
		}
		sqlText := b.String()
		want := false
		words := strings.FieldsFunc(sqlText, func(r rune) bool { return r < 0x80 && !wordByte(byte(r)) })
		for _, name := range names {
			switch {
			case strings.ContainsAny(name, "\"`"):
				want = true
			case isASCIIWord(name):
				for _, w := range words {
					want = want || strings.EqualFold(w, name)
				}
			default:
				want = want || sqltok.ContainsFold(sqlText, strings.ToLower(name))
			}
		}
		if got := newColumnNames(names).namedIn(sqlText); got != want {
			t.Fatalf("names %q in %q: %v, want %v", names, sqlText, got, want)
		}
	})
}

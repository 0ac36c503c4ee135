package trinohttp

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// wordIs answers as strings.EqualFold for every keyword the frontend reads, also for words with
// the letters that fold to ASCII ones (ſ to s, K to k) and for words the fast checks rule out.
func TestWordIsEqualFold(t *testing.T) {
	keywords := []string{"USE", "PREPARE", "DEALLOCATE", "SET", "RESET", "START", "COMMIT", "ROLLBACK", "PATH", "SESSION",
		"FROM", "WORK", "TRANSACTION", "K"}
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.SampledFrom(keywords).Draw(rt, "keyword")
		var w strings.Builder
		for _, c := range k {
			switch rapid.IntRange(0, 9).Draw(rt, "letter") {
			case 0: // another letter, or none
				w.WriteString(rapid.SampledFrom([]string{"", "x", "1", "é", "_"}).Draw(rt, "other"))
			case 1:
				w.WriteString(strings.ToLower(string(c)))
			case 2: // a letter folding to this one, where there is one
				switch c {
				case 'S':
					w.WriteString("ſ")
				case 'K':
					w.WriteString("\u212a")
				default:
					w.WriteRune(c)
				}
			default:
				w.WriteRune(c)
			}
		}
		w.WriteString(rapid.SampledFrom([]string{"", "", "", "s", "ſ"}).Draw(rt, "tail"))
		if got, want := wordIs(w.String(), k), strings.EqualFold(w.String(), k); got != want {
			rt.Fatalf("wordIs(%q, %q) = %v, strings.EqualFold %v", w.String(), k, got, want)
		}
	})
	for _, c := range []struct {
		w, k string
		want bool
	}{{"select", "SET", false}, {"set", "SET", true}, {"ſet", "SET", true}, {"\u212a", "K", true}, {"", "SET", false}, {"rollback", "ROLLBACK", true}} {
		if got := wordIs(c.w, c.k); got != c.want {
			t.Errorf("wordIs(%q, %q) = %v, want %v", c.w, c.k, got, c.want)
		}
	}
}

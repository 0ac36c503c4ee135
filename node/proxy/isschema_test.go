package proxy

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestIsSchemaIsEqualFold: isSchema's length bounds and first-byte test, and isSystemSchema's
// lengths, never skip a name strings.EqualFold matches, letters that fold to ASCII from two and
// three bytes ('ſ', 'K') included.
func TestIsSchemaIsEqualFold(t *testing.T) {
	schemas := []string{"information_schema", "performance_schema", "sys"}
	letters := []string{"s", "S", "ſ", "y", "Y", "k", "K", "_", "i", "n", "f", "o", "r", "m", "a", "t", "p", "e", "c", "h"}
	rapid.Check(t, func(t *rapid.T) {
		var name string
		if rapid.Bool().Draw(t, "from a schema") { // a schema with letters swapped for their folds
			for _, r := range rapid.SampledFrom(schemas).Draw(t, "schema") {
				switch {
				case r == 's' && rapid.Bool().Draw(t, "long s"):
					name += "ſ"
				case r == 'k' && rapid.Bool().Draw(t, "kelvin"):
					name += "K"
				case rapid.Bool().Draw(t, "upper"):
					name += strings.ToUpper(string(r))
				default:
					name += string(r)
				}
			}
		} else {
			name = strings.Join(rapid.SliceOfN(rapid.SampledFrom(letters), 0, 20).Draw(t, "letters"), "")
		}
		want := false
		for _, s := range schemas {
			want = want || strings.EqualFold(name, s)
		}
		if got := isSchema(name, schemas...); got != want {
			t.Fatalf("isSchema(%q) = %v, EqualFold says %v", name, got, want)
		}
		if got := isSystemSchema(name); got != want {
			t.Fatalf("isSystemSchema(%q) = %v, EqualFold says %v", name, got, want)
		}
	})
}

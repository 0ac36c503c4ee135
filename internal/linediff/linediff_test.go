package linediff

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestUnifiedNamesTheChangedLine(t *testing.T) {
	a := strings.Split("a\nb\nc\nd\ne\nf\ng\nh", "\n")
	b := strings.Split("a\nb\nc\nD\ne\nf\ng\nh\ni", "\n")
	got, changed := Unified(a, b, 1)
	want := []string{"@@ -3 +3 @@", " c", "-d", "+D", " e", "@@ -8 +8 @@", " h", "+i"}
	if !changed || !slices.Equal(got, want) {
		t.Fatalf("got %q (changed %v), want %q", got, changed, want)
	}
	if got, changed := Unified(a, a, 3); changed || len(got) != 0 {
		t.Fatalf("equal texts: %q %v", got, changed)
	}
}

// The script rebuilds both sides and is shortest: its changes are len(a)+len(b) less twice
// the longest common subsequence (computed here the slow, obvious way).
func TestEditsRebuildBothSides(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.SliceOfN(rapid.SampledFrom([]string{"x", "y", "z", "w"}), 0, 30)
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		script := edits(a, b)
		var ra, rb []string
		changes := 0
		for _, e := range script {
			if e.kind != '+' {
				ra = append(ra, e.line)
			}
			if e.kind != '-' {
				rb = append(rb, e.line)
			}
			if e.kind != ' ' {
				changes++
			}
		}
		if !slices.Equal(ra, a) || !slices.Equal(rb, b) {
			t.Fatalf("script %v rebuilds %q and %q, not %q and %q", script, ra, rb, a, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
			t.Fatalf("%d changes, the shortest script has %d", changes, want)
		}
	})
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

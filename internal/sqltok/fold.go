package sqltok

import "strings"

// ContainsFold reports whether s holds word (lower-case ASCII) in any case: the scan that
// decides, without lexing, whether a statement can name something at all. The candidates (the
// word's first byte in either case) are found with strings.IndexByte, which reads many bytes a
// step: a statement is scanned once per needle, and duckengine asks some forty needles of each.
func ContainsFold(s, word string) bool {
	if word == "" {
		return true
	}
	last := len(s) - len(word) // the last place word can start
	if last < 0 {
		return false
	}
	w0, alt := word[0], word[0]
	if 'a' <= w0 && w0 <= 'z' {
		alt = w0 - 'a' + 'A'
	}
	starts := s[:last+1]
	next := func(c byte, from int) int {
		if j := strings.IndexByte(starts[from:], c); j >= 0 {
			return from + j
		}
		return last + 1
	}
	// lo and up are the next places of each case at or after i; each only moves forward, so
	// a byte frequent in one case cannot make the other's search run again from i each time.
	lo, up := -1, -1
	if alt == w0 {
		up = last + 1 // one case only
	}
	for i := 0; i <= last; {
		if lo < i {
			lo = next(w0, i)
		}
		if alt != w0 && up < i {
			up = next(alt, i)
		}
		c := min(lo, up)
		if c > last {
			return false
		}
		if strings.EqualFold(s[c:c+len(word)], word) {
			return true
		}
		i = c + 1
	}
	return false
}

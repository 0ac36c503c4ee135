package sqltok

import "strings"

// ContainsFold reports whether s holds word (lower-case ASCII) in any case: the scan that
// decides, without lexing, whether a statement can name something at all.
func ContainsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if c := s[i]; (c == word[0] || c|0x20 == word[0] && c >= 'A') && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

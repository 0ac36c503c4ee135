package sqltok

import "strings"

// Edit replaces a statement's text from byte From to byte To (To >= From; equal: an insertion)
// with Text.
type Edit struct {
	From, To int
	Text     string
}

// Splice is text with edits made: edits in the order of their From, none overlapping another.
func Splice(text string, edits []Edit) string {
	var b strings.Builder
	at := 0
	for _, e := range edits {
		b.WriteString(text[at:e.From])
		b.WriteString(e.Text)
		at = e.To
	}
	b.WriteString(text[at:])
	return b.String()
}

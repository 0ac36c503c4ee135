package pgwire

import "unsafe"

// textArena makes a client's statement texts (the loop's simple Queries) as strings carved
// out of a block it allocates at once, instead of one allocation a text: a statement's text
// is the one allocation a relayed transaction makes otherwise. A block is written only past
// the texts carved from it, so a text, once carved, never changes, as a string must not (a
// sqltok.ShapedText tells texts apart by their bytes' address). A text that is kept (the
// history's, a memo's) keeps its whole block: a block is small, and a client's texts are
// kept alike.
type textArena struct {
	block []byte
}

const (
	textBlock   = 2048           // the bytes of a block
	textInBlock = textBlock / 16 // a longer text is a string of its own, so that it fills no block
)

// string is b as a string, carved from the current block when it fits.
func (a *textArena) string(b []byte) string {
	if len(b) == 0 || len(b) > textInBlock {
		return string(b)
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, textBlock)
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[n], len(b))
}

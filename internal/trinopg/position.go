package trinopg

import "unicode/utf8"

// edit is one replacement a translation made: the bytes [at, at+old) of its input written as
// new bytes.
type edit struct{ at, old, new int }

// Translation is a statement as PostgreSQL runs it (SQL) and how to find in the client's text
// (Original) a place PostgreSQL's error names in SQL.
type Translation struct {
	SQL, Original string
	// passes are each pass's edits in order, each pass's offsets in its input.
	passes [][]edit
}

// Position is PostgreSQL's error position pos (characters from 1, in SQL) as the same place in
// Original: the start of what a translation wrote there. 0 stays 0 (no position).
func (t Translation) Position(pos int32) int32 {
	if pos <= 0 || len(t.passes) == 0 {
		return pos
	}
	at := byteOffset(t.SQL, int(pos)-1)
	for i := len(t.passes) - 1; i >= 0; i-- {
		at = before(t.passes[i], at)
	}
	return int32(utf8.RuneCountInString(t.Original[:min(at, len(t.Original))])) + 1
}

// before is the offset in a pass's input of offset at in its output.
func before(edits []edit, at int) int {
	delta := 0
	for _, e := range edits {
		switch start := e.at + delta; {
		case at < start:
			return at - delta
		case at < start+e.new:
			return e.at
		}
		delta += e.new - e.old
	}
	return at - delta
}

// byteOffset is the byte offset of the n-th character of s (from 0), len(s) past its end.
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

package sqltok

import (
	"sync/atomic"
	"unsafe"
)

// A Shape stands for the texts that SameButDigits finds alike with one text (an equivalence:
// each run of ASCII digits counts as one mark, whatever its digits and length). A frontend that
// compares each statement of its client with the one before (the PostgreSQL loop) keeps a Shape
// for the texts it found alike and hands it on with each of them (ShapedText), so that the
// readers after it (the shared engine user's checks, history's redaction) find what they
// learned of an earlier text of the shape by the Shape's notes, without comparing the bytes
// again. Nothing in a Shape names a text: a reader trusts a note only for a text vouched for
// by ShapedText.Of. Its notes are atomics: texts of one Shape may be read on several threads
// (a queued history record is redacted by its sender).
type Shape struct {
	plain atomic.Bool  // SetPlain: the shared engine user's checks need not read the shape's texts
	note  atomic.Value // SetNote: history's redaction of the shape's texts (one writer type)
}

// Plain reports whether SetPlain was called.
func (s *Shape) Plain() bool { return s.plain.Load() }

// SetPlain records that the shared engine user's checks (node/proxy) find nothing in a text
// of this shape, and so in every text of it.
func (s *Shape) SetPlain() { s.plain.Store(true) }

// Note is what SetNote stored last; nil for nothing.
func (s *Shape) Note() any { return s.note.Load() }

// SetNote stores v, a pointer of the one type every writer of the note uses (internal/history's
// redaction memo), the reader checking that it is its own.
func (s *Shape) SetNote(v any) { s.note.Store(v) }

// ShapedText is a text and the Shape it was found to have; the zero value knows no shape.
type ShapedText struct {
	text  string
	shape *Shape
}

// Shaped is text found to have shape s (nil: none known).
func Shaped(text string, s *Shape) ShapedText { return ShapedText{text: text, shape: s} }

// Of is st's Shape when text is st's very text (the same string, not an equal copy or a
// rewrite of it: a rewritten text is not vouched for), else nil. A string's bytes never
// change, so the same pointer and length are the same text.
func (st ShapedText) Of(text string) *Shape {
	if st.shape == nil || len(text) != len(st.text) || len(text) == 0 || unsafe.StringData(text) != unsafe.StringData(st.text) {
		return nil
	}
	return st.shape
}

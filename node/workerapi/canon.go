package workerapi

import (
	"strconv"
	"time"
)

// CanonWriter and CanonReader are the heartbeat codec's canonical JSON (codec.go) for the
// codecs of other packages' hot messages (the capacity API's acquire): a writer that appends
// exactly what json.Marshal writes for the values it takes, and a reader of exactly those
// bytes. Either gives up (Bytes' ok, End false) at the first value it cannot be exact about;
// the caller then uses encoding/json, and rapid tests hold each codec to it both ways.

// CanonWriter appends the canonical form of JSON values.
type CanonWriter struct{ e encoder }

// NewCanonWriter appends to dst.
func NewCanonWriter(dst []byte) *CanonWriter { return &CanonWriter{e: encoder{b: dst, ok: true}} }

// Raw appends s as it is (keys, punctuation).
func (w *CanonWriter) Raw(s string) { w.e.b = append(w.e.b, s...) }

// Str appends a string (giving up on text encoding/json would escape).
func (w *CanonWriter) Str(s string) { w.e.str(s) }

// Int appends an integer.
func (w *CanonWriter) Int(n int64) { w.e.b = strconv.AppendInt(w.e.b, n, 10) }

// Bool appends true or false.
func (w *CanonWriter) Bool(v bool) { w.e.b = strconv.AppendBool(w.e.b, v) }

// Time appends a time as time.Time.MarshalJSON does.
func (w *CanonWriter) Time(t time.Time) { w.e.time(t) }

// Bytes is what was appended, and whether all of it is canonical.
func (w *CanonWriter) Bytes() ([]byte, bool) { return w.e.b, w.e.ok }

// CanonReader reads the canonical form: a part that is not what was asked for marks the
// input bad, and every later read fails too.
type CanonReader struct{ r reader }

// NewCanonReader reads data.
func NewCanonReader(data []byte) *CanonReader {
	return &CanonReader{r: reader{b: data, bad: len(data) > BodyBytesMax}}
}

// Lit consumes s if it comes next.
func (r *CanonReader) Lit(s string) bool { return r.r.lit(s) }

// Need consumes s, which must come next.
func (r *CanonReader) Need(s string) { r.r.need(s) }

// Str reads a string of plain text.
func (r *CanonReader) Str(s *string) bool { return r.r.str(s) }

// Word reads a string as Str does, for a value the messages of a fleet repeat (a cluster's
// name): a string shared with the messages before it that carried the same bytes, if still
// held (the decoder keeps a small table of such words; never one worth secrecy).
func (r *CanonReader) Word(s *string) bool { return r.r.word(s) }

// Int reads a number as encoding/json reads one into an int64.
func (r *CanonReader) Int(v *int64) bool {
	num, ok := r.r.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return r.r.fail()
	}
	*v = n
	return true
}

// Bool reads true or false.
func (r *CanonReader) Bool(v *bool) bool { return r.r.bool(v) }

// Time reads a string as time.Time.UnmarshalJSON does.
func (r *CanonReader) Time(t *time.Time) bool { return r.r.time(t) }

// End reports whether everything was read and all of it was canonical.
func (r *CanonReader) End() bool { return r.r.end() }

// DecodeStrict decodes data into v as ReadJSON does: one JSON object, no unknown or
// case-mismatched keys, no wrong types, nothing after it (a *FieldError otherwise).
func DecodeStrict(data []byte, v any) error { return decodeStrict(data, v) }

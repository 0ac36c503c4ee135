package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Revision is the lower-case hex xxHash64 (16 digits) of s's canonical JSON.
func Revision(s *WorkerSnapshotV1) (string, error) {
	canon, err := Canonical(s)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%016x", xxhash.Sum64(canon)), nil
}

// Canonical is the JSON the revision hashes: the snapshot without "revision" and "confirmedAt",
// with object keys sorted at every level, no insignificant whitespace, numbers in shortest form,
// strings escaped as encoding/json does without HTML escaping, and object members that are null,
// [] or {} left out (so "absent" and "empty" name the same content).
func Canonical(s *WorkerSnapshotV1) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("snapshot: encode: %w", err)
	}
	return CanonicalJSON(raw)
}

// CanonicalJSON canonicalizes an encoded snapshot (any key order, any whitespace), dropping the
// top-level "revision" and "confirmedAt".
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("snapshot: canonical: %w", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("snapshot: canonical: a snapshot is a JSON object, got %T", v)
	}
	delete(top, "revision")
	delete(top, "confirmedAt")
	w := newCanonWriter()
	if err := w.value(top, 0); err != nil {
		return nil, err
	}
	return w.out.Bytes(), nil
}

// canonicalValue canonicalizes any JSON value (nothing dropped at the top level). A null, []
// or {} at the top is written as null, like an absent member.
func canonicalValue(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if isEmpty(v) {
		v = nil
	}
	w := newCanonWriter()
	if err := w.value(v, 0); err != nil {
		return nil, err
	}
	return w.out.Bytes(), nil
}

// depthMax bounds the nesting the canonical writer follows; snapshots are a few levels deep.
const depthMax = 64

// canonWriter writes canonical JSON; scratch and enc are reused for every string.
type canonWriter struct {
	out     bytes.Buffer
	scratch bytes.Buffer
	enc     *json.Encoder
}

func newCanonWriter() *canonWriter {
	w := &canonWriter{}
	w.enc = json.NewEncoder(&w.scratch)
	w.enc.SetEscapeHTML(false)
	return w
}

func (w *canonWriter) value(v any, depth int) error {
	if depth > depthMax {
		return fmt.Errorf("snapshot: canonical: nesting deeper than %d", depthMax)
	}
	switch x := v.(type) {
	case nil:
		w.out.WriteString("null")
	case bool:
		w.out.WriteString(strconv.FormatBool(x))
	case json.Number:
		return writeNumber(&w.out, x)
	case string:
		w.string(x)
	case []any:
		w.out.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.out.WriteByte(',')
			}
			if err := w.value(e, depth+1); err != nil {
				return err
			}
		}
		w.out.WriteByte(']')
	case map[string]any:
		w.out.WriteByte('{')
		first := true
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if isEmpty(x[k]) {
				continue
			}
			if !first {
				w.out.WriteByte(',')
			}
			first = false
			w.string(k)
			w.out.WriteByte(':')
			if err := w.value(x[k], depth+1); err != nil {
				return err
			}
		}
		w.out.WriteByte('}')
	default:
		panic(fmt.Sprintf("snapshot: canonical: unexpected JSON value %T", v))
	}
	return nil
}

// string writes s as encoding/json does, without HTML escaping.
func (w *canonWriter) string(s string) {
	w.scratch.Reset()
	if err := w.enc.Encode(s); err != nil {
		panic(fmt.Sprintf("snapshot: canonical: encoding a string cannot fail: %v", err))
	}
	w.out.Write(bytes.TrimSuffix(w.scratch.Bytes(), []byte("\n")))
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// writeNumber writes integers in decimal and other numbers in Go's shortest float form, so
// 1, 1.0 and 1e0 are one number.
func writeNumber(buf *bytes.Buffer, n json.Number) error {
	if i, err := n.Int64(); err == nil {
		buf.WriteString(strconv.FormatInt(i, 10))
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		return fmt.Errorf("snapshot: canonical: bad number %q", n)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		buf.WriteString(strconv.FormatInt(int64(f), 10))
		return nil
	}
	buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	return nil
}

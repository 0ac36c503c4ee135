package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// text draws strings that exercise every escape: any bytes (invalid UTF-8 included), any runes,
// and the characters encoding/json treats specially.
func text() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
		rapid.Map(rapid.SliceOf(rapid.SampledFrom([]string{`"`, `\`, "\n", "\b", "\f", "\r", "\t", "\x00", "\x1f", "\x7f",
			"<", ">", "&", "\u2028", "\u2029", "é", "日本", "\xff", "\xc3", "a"})), func(parts []string) string {
			return strings.Join(parts, "")
		}),
	)
}

// encodingJSON is how encoding/json writes s, with or without HTML escaping.
func encodingJSON(t *rapid.T, s string, escapeHTML bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// TestAppendStringIsEncodingJSON holds AppendString to encoding/json's output, byte for byte, in
// both modes, appended after whatever dst held.
func TestAppendStringIsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, prefix := text().Draw(t, "s"), rapid.StringMatching(`[a-z,]{0,3}`).Draw(t, "prefix")
		escapeHTML := rapid.Bool().Draw(t, "escapeHTML")
		got := string(AppendString([]byte(prefix), s, escapeHTML))
		if want := prefix + encodingJSON(t, s, escapeHTML); got != want {
			t.Fatalf("AppendString(%q, escapeHTML %v)\n got %s\nwant %s", s, escapeHTML, got, want)
		}
	})
}

// TestAppendStringFindsAnEscapeAnywhereInAPlainRun: a byte to escape (or not ASCII) at any
// place in a run of plain ASCII is found, wherever it falls in a word of plainRun's.
func TestAppendStringFindsAnEscapeAnywhereInAPlainRun(t *testing.T) {
	specials := []string{`"`, `\`, "\x00", "\x1f", "\n", "\x7f", " ", "~", "<", "&", "\u2028", "é", "\xff", "\x80"}
	rapid.Check(t, func(t *rapid.T) {
		plain := rapid.StringMatching(`[ -!#-\[\]-~]{0,40}`).Draw(t, "plain")
		at := rapid.IntRange(0, len(plain)).Draw(t, "at")
		for _, special := range specials {
			s := plain[:at] + special + plain[at:]
			for _, escapeHTML := range []bool{false, true} {
				if got, want := string(AppendString(nil, s, escapeHTML)), encodingJSON(t, s, escapeHTML); got != want {
					t.Fatalf("AppendString(%q, escapeHTML %v)\n got %s\nwant %s", s, escapeHTML, got, want)
				}
			}
		}
	})
}

// AppendContent is AppendString without its quotes, appended after whatever dst held.
func TestAppendContentIsAppendStringWithoutItsQuotes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, prefix := text().Draw(t, "s"), rapid.StringMatching(`[a-z,]{0,3}`).Draw(t, "prefix")
		html := rapid.Bool().Draw(t, "escapeHTML")
		quoted := encodingJSON(t, s, html)
		if got, want := string(AppendContent([]byte(prefix), s, html)), prefix+quoted[1:len(quoted)-1]; got != want {
			t.Fatalf("AppendContent(%q, %q, %v) = %q, want %q", prefix, s, html, got, want)
		}
	})
}

// Package jsonstr appends a string quoted as encoding/json quotes it, byte for byte, for the
// hand-written encoders on hot paths (Trino pages, history batches) that skip reflection.
//
// It is pure computation on byte slices: it touches nothing, so role code may call it anywhere.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// safe[c] is whether ASCII byte c goes out as itself; htmlSafe also escapes <, > and &, as
// encoding/json does unless told SetEscapeHTML(false).
var safe, htmlSafe = asciiSafe(false), asciiSafe(true)

func asciiSafe(escapeHTML bool) (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && !(escapeHTML && (c == '<' || c == '>' || c == '&'))
	}
	return t
}

// AppendString appends s to dst as a JSON string, as encoding/json writes it: ", \ and control
// characters escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped, and with escapeHTML
// (json.Marshal's default) <, > and & as \u003c, \u003e and \u0026.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	ok := &safe
	if escapeHTML {
		ok = &htmlSafe
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if ok[c] {
				i++
				continue
			}
			dst = appendEscaped(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// appendEscaped appends the escape of an ASCII byte that does not go out as itself.
func appendEscaped(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

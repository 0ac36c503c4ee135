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
	return append(AppendContent(append(dst, '"'), s, escapeHTML), '"')
}

// AppendContent appends what AppendString writes between its quotes: for a string written in
// parts (AppendContent of each, between one pair of quotes) without making it.
func AppendContent(dst []byte, s string, escapeHTML bool) []byte {
	ok := &safe
	if escapeHTML {
		ok = &htmlSafe
	}
	start := 0
	i := 0
	if !escapeHTML {
		i = plainRun(s)
	}
	for i < len(s) {
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
	return append(dst, s[start:]...)
}

// plainRun is the length of s's longest prefix of whole 8-byte words that go out as they are
// (ASCII from 0x20, no '"' and no '\\'), tested a word at a time: a byte at a time was most of
// a Trino page's string work (ids, URIs: RESULTS.md, "(#22, 2026-12-06, session 39,
// trinoperf)"). The bytes after it are AppendString's to look at one by one.
func plainRun(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		// A byte under 0x20, a zero byte of quote or backslash (a '"' or '\\' in x), or a high
		// bit (not ASCII) sets a high bit here; no word without one of them does.
		if ((x-ones*0x20)&^x|(quote-ones)&^quote|(backslash-ones)&^backslash|x)&highs != 0 {
			break
		}
	}
	return i
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

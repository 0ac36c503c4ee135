// Package mysqlcharset converts a MySQL client's latin1 bytes to UTF-8 and back, as MariaDB
// converts them: its latin1 is Windows-1252 (0x80 is €), with the five bytes Windows-1252
// leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) taken for the code points of the same value.
// An engine that is not MySQL reads and writes UTF-8 only; a MySQL engine takes the client's
// bytes as they are (it opens its connection in the client's set).
package mysqlcharset

import (
	"strings"
	"unicode/utf8"
)

// IsLatin1 reports whether the MariaDB collation id is one of latin1's.
func IsLatin1(collation uint8) bool {
	switch collation {
	case 5, 8, 15, 31, 47, 48, 49, 94:
		return true
	}
	return false
}

// cp1252 are the code points of bytes 0x80-0x9F.
var cp1252 = [32]rune{
	0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
	0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
}

// Latin1ToUTF8 is s, latin1 bytes, in UTF-8; s itself when it is ASCII.
func Latin1ToUTF8(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c < utf8.RuneSelf:
			b.WriteByte(c)
		case c < 0xA0:
			b.WriteRune(cp1252[c-0x80])
		default:
			b.WriteRune(rune(c))
		}
	}
	return b.String()
}

// AppendLatin1 appends s, UTF-8, in latin1 to dst: a character latin1 has no byte for is '?',
// as MariaDB writes it (so is a byte that is not UTF-8).
func AppendLatin1(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		dst = append(dst, latin1Byte(r))
	}
	return dst
}

func latin1Byte(r rune) byte {
	if r >= 0xA0 && r <= 0xFF {
		return byte(r)
	}
	for i, c := range cp1252 {
		if c == r {
			return byte(0x80 + i)
		}
	}
	return '?'
}

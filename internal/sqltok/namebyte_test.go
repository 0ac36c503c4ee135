package sqltok

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestIsNameByteIsTheTokenizersRule: IsNameByte is true for an ASCII byte exactly where the
// tokenizer reads the byte after a name's first letter as part of that name ("$" but in
// Trino), and for every byte of a multi-byte character.
func TestIsNameByteIsTheTokenizersRule(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		for _, d := range []Dialect{Postgres, MySQL, Trino, Generic} {
			toks := Tokenize("a"+string(rune(c))+"b", d)
			oneName := len(toks) == 1 && toks[0].Kind == Word
			want := IsNameByte(byte(c)) && (c != '$' || d != Trino)
			if oneName != want {
				t.Errorf("%v: %q is one name: %v; IsNameByte(%q) = %v", d, "a"+string(rune(c))+"b", oneName, rune(c), IsNameByte(byte(c)))
			}
		}
	}
	for _, s := range []string{"é", "ß", "名", "\u0301"} {
		if toks := Tokenize("a"+s, Postgres); len(toks) != 1 || toks[0].Kind != Word {
			t.Errorf("%q: %v, want one name", "a"+s, toks)
		}
	}
	for c := 0x80; c < 0x100; c++ {
		if !IsNameByte(byte(c)) {
			t.Errorf("IsNameByte(%#x) = false, want true for a byte of a multi-byte character", c)
		}
	}
}

// sameButDigitsByBytes is SameButDigits a byte at a time, as node/proxy's memo compared texts
// before (RESULTS.md, session 31: ~1,100 instructions per pgbench statement).
func sameButDigitsByBytes(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			continue
		}
		if a[i] != b[j] {
			return false
		}
		i++
		j++
	}
	return i == len(a) && j == len(b)
}

// TestSameButDigitsIsTheByteScan: eight bytes at a time where the texts agree, SameButDigits
// answers as the byte-at-a-time scan, for texts that differ anywhere (in digits, around
// them, in length, across a word's boundary).
func TestSameButDigitsIsTheByteScan(t *testing.T) {
	for _, c := range [][2]string{{"", ""}, {"a", ""}, {"1", ""}, {"12", "1"}, {"a1b", "ab"}, {"a1b", "a22b"},
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 12345;", "SELECT abalance FROM pgbench_accounts WHERE aid = 7;"},
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 12345;", "SELECT abalance FROM pgbench_accounts WHERE aid = 7 ;"},
		{"select 1x", "select 2y"}, {"0123456789abcdef", "0123456789abcdeg"}, {"x12345678y", "x1y"}} {
		for _, p := range [][2]string{c, {c[1], c[0]}} {
			if got, want := SameButDigits(p[0], p[1]), sameButDigitsByBytes(p[0], p[1]); got != want {
				t.Errorf("SameButDigits(%q, %q) = %v, the byte scan says %v", p[0], p[1], got, want)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		piece := rapid.SampledFrom([]string{"select ", "abalance", " = ", "0", "7", "12345678", "1", "x", ";", " ", "a", "é"})
		pieces := rapid.SliceOfN(piece, 0, 12).Draw(t, "pieces")
		a := strings.Join(pieces, "")
		// b: a with some pieces changed, dropped or added
		for _, k := range rapid.SliceOfN(rapid.IntRange(0, len(pieces)), 0, 3).Draw(t, "edits") {
			if k < len(pieces) {
				pieces[k] = piece.Draw(t, "new")
			} else {
				pieces = append(pieces, piece.Draw(t, "added"))
			}
		}
		b := strings.Join(pieces, "")
		if got, want := SameButDigits(a, b), sameButDigitsByBytes(a, b); got != want {
			t.Fatalf("SameButDigits(%q, %q) = %v, the byte scan says %v", a, b, got, want)
		}
	})
}

// TestSameButDigitsOfOneLengthIsTheByteScan: texts of one length that differ at drawn places
// (a digit for a digit, a digit for another byte, or any byte), across and within words, are
// answered as the byte-at-a-time scan answers.
func TestSameButDigitsOfOneLengthIsTheByteScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := []byte("0123456789 =;_aé\x80\xff")
		a := rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 40).Draw(t, "a")
		b := append([]byte(nil), a...)
		for _, k := range rapid.SliceOfN(rapid.IntRange(0, 39), 0, 4).Draw(t, "places") {
			switch {
			case k >= len(b):
			case rapid.Bool().Draw(t, "top bit"):
				b[k] ^= 0x80 // the byte's low bits kept: only a word's top bits tell them apart
			default:
				b[k] = rapid.SampledFrom(alphabet).Draw(t, "byte")
			}
		}
		if got, want := SameButDigits(a, b), sameButDigitsByBytes(string(a), string(b)); got != want {
			t.Fatalf("SameButDigits(%q, %q) = %v, the byte scan says %v", a, b, got, want)
		}
		if got, want := SameButDigits(string(a), string(b)), sameButDigitsByBytes(string(a), string(b)); got != want {
			t.Fatalf("SameButDigits(%q, %q) as strings = %v, the byte scan says %v", a, b, got, want)
		}
	})
}

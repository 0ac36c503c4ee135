package history

import (
	"errors"
	"strings"
)

// A NUL byte cannot be stored in PostgreSQL's text, and a store that dropped it would file
// "a\x00b" as "ab": two users' (or queries') records as one. Every node's uplink writes its
// records' NULs as a visible escape before any store sees them, by one rule for a worker's
// records and a standalone node's own:
//
//   - a query id or a name (worker, user, protocol, group, cluster) by EscapeKeyNUL, which no
//     two names share: NUL is written "␀0" and a U+2400 (␀) of the name "␀␀";
//   - free text (the statement, its digest, its error and error code, the routing trace) by
//     EscapeTextNUL: NUL is written "␀", the text otherwise as it was.
//
// What reaches the control plane with a NUL anyway (a worker of an older build, or a hostile
// one) has its free text escaped by EscapeTextNUL and a record with a NUL in a key refused
// (KeyNUL), never stored under another name.

// ErrKeyNUL is a store's refusal of a record whose query id or a name holds a NUL byte.
var ErrKeyNUL = errors.New("history: a query id or name holds a NUL byte (\\u0000), which no store files under that name")

// nulSign is U+2400 SYMBOL FOR NULL, the escape's visible sign.
const nulSign = "\u2400"

// EscapeKeyNUL is s with its NULs written "␀0" and its ␀s "␀␀"; s itself when it holds
// neither. Two names never escape alike, and a name without either is kept as it is.
func EscapeKeyNUL(s string) string {
	if keyPlain(s) || strings.IndexByte(s, 0) < 0 && !strings.Contains(s, nulSign) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0:
			b.WriteString(nulSign + "0")
		case strings.HasPrefix(s[i:], nulSign):
			b.WriteString(nulSign + nulSign)
			i += len(nulSign) - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// EscapeTextNUL is free text s with each NUL written "␀" (s itself when it holds none).
func EscapeTextNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", nulSign)
}

// keyPlain reports whether s holds no NUL and no 0xE2 byte (the first of U+2400's three), so
// that EscapeKeyNUL keeps it as it is: eight bytes at a time. A record's six keys are each
// looked at once a record on a standalone node's event loop, where IndexByte and Contains
// (a call each, Contains a substring search) cost ~70 instructions a key.
func keyPlain(s string) bool {
	const ones, tops, e2s = 0x0101010101010101, 0x8080808080808080, 0xe2e2e2e2e2e2e2e2
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 || s[i] == 0xe2 {
				return false
			}
		}
		return true
	}
	for i := 0; ; i += 8 {
		i = min(i, len(s)-8) // the last word overlaps the one before
		w := s[i : i+8]
		_ = w[7] // one bounds check: the compiler then reads the word as one load
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		y := x ^ e2s // a 0xE2 byte of x is a zero byte of y
		// (v - ones) &^ v has a byte's top bit set where v has a zero byte (and maybe above it,
		// but never when v has none).
		if ((x-ones)&^x|(y-ones)&^y)&tops != 0 {
			return false
		}
		if i+8 == len(s) {
			return true
		}
	}
}

// escapeKeysNUL writes r's query id and names by EscapeKeyNUL.
func escapeKeysNUL(r *Record) {
	if keyPlain(r.QueryID) && keyPlain(r.Worker) && keyPlain(r.User) && keyPlain(r.Protocol) &&
		keyPlain(r.Group) && keyPlain(r.Cluster) {
		return // the common record: nothing to escape, and no key written back
	}
	for _, s := range [...]*string{&r.QueryID, &r.Worker, &r.User, &r.Protocol, &r.Group, &r.Cluster} {
		*s = EscapeKeyNUL(*s)
	}
}

// escapeTextNUL writes r's free text by EscapeTextNUL; the routing trace is copied before a
// step of it is written (a prepared record's trace is shared).
func escapeTextNUL(r *Record) {
	for _, s := range [...]*string{&r.SQL, &r.SQLDigest, &r.ErrorCode, &r.Error} {
		*s = EscapeTextNUL(*s)
	}
	r.RoutingTrace = EscapeTraceNUL(r.RoutingTrace)
}

// EscapeTraceNUL is trace with its steps by EscapeTextNUL: trace itself when none holds a NUL,
// else a copy.
func EscapeTraceNUL(trace []string) []string {
	for i, s := range trace {
		if strings.IndexByte(s, 0) < 0 {
			continue
		}
		out := append([]string(nil), trace...)
		for j := i; j < len(out); j++ {
			out[j] = EscapeTextNUL(out[j])
		}
		return out
	}
	return trace
}

// textNUL says whether r's free text holds a NUL.
func textNUL(r *Record) bool {
	for _, s := range [...]string{r.SQL, r.SQLDigest, r.ErrorCode, r.Error} {
		if strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
	for _, s := range r.RoutingTrace {
		if strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
	return false
}

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
	if strings.IndexByte(s, 0) < 0 && !strings.Contains(s, nulSign) {
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

// escapeKeysNUL writes r's query id and names by EscapeKeyNUL.
func escapeKeysNUL(r *Record) {
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

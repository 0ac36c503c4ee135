// Package refusallog decides which refusals of a request are logged: the first of a kind at
// once, then at most one line of the kind every period, counting the refusals since. A caller
// that repeats a refused request in a loop cannot flood the log, and a kind names whoever must
// be named (the worker, say), so that a second worker's refusals within the period are logged
// and named rather than only counted in the first worker's line.
//
// The limiter keeps no clock of its own: every call is given the time (role code reads it from
// its environment), and Due's order is the order kinds were first seen.
package refusallog

import (
	"slices"
	"sync"
	"time"
)

const (
	// DefaultEvery is a limiter's period when its Every is zero.
	DefaultEvery = time.Minute
	// DefaultKindsMax is a limiter's bound on kinds when its KindsMax is zero.
	DefaultKindsMax = 4096
	// NamesMax is how many distinct names a line lists; the line's count says how many more
	// refusals there were.
	NamesMax = 5
)

// Limiter is the state of the refusal lines of kinds K. Its zero value is ready to use, with
// DefaultEvery and DefaultKindsMax; it is safe for concurrent use.
type Limiter[K comparable] struct {
	// Every is the least time between two lines of one kind (0: DefaultEvery).
	Every time.Duration
	// KindsMax bounds the kinds remembered (0: DefaultKindsMax): past it, the kinds whose last
	// line is Every old are forgotten (their next refusal is logged at once; refusals they
	// were still to log are left to the caller's metric), and all kinds if that is not enough.
	KindsMax int

	mu    sync.Mutex
	kinds map[K]*kind
	order []K // the kinds in the order they were first seen
}

type kind struct {
	count  int       // refusals not in a line yet
	since  time.Time // the first of them
	names  []string  // their first NamesMax distinct names
	err    error     // the last one's
	logged time.Time // the last line; zero: none yet
}

// Line is what a line logs: Count refusals of Kind since the last line (the first of them at
// Since), their first distinct names and the last one's error.
type Line[K comparable] struct {
	Kind  K
	Count int
	Since time.Time
	Names []string
	Err   error
}

// every is the limiter's period.
func (l *Limiter[K]) every() time.Duration {
	if l.Every > 0 {
		return l.Every
	}
	return DefaultEvery
}

// Note counts a refusal of kind k at now, with the name it asked for or was sent under ("":
// none) and its error. ok: a line is due now (the kind's first, or its first for a period),
// and line is it, counting the refusals since the last one, this one included.
func (l *Limiter[K]) Note(k K, name string, err error, now time.Time) (line Line[K], ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.kinds[k]
	if r == nil {
		l.makeRoom(now)
		r = &kind{}
		l.kinds[k] = r
		l.order = append(l.order, k)
	}
	if r.count == 0 {
		r.since = now
	}
	r.count++
	r.err = err
	if name != "" && len(r.names) < NamesMax && !slices.Contains(r.names, name) {
		r.names = append(r.names, name)
	}
	return l.take(k, r, now)
}

// Due returns the lines due at now: of each kind with refusals not yet in a line whose last
// line is a period old. A periodic tick calls it, so that the count at the end of a burst is
// logged without waiting for the next refusal of its kind.
func (l *Limiter[K]) Due(now time.Time) []Line[K] {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []Line[K]
	for _, k := range l.order {
		if line, ok := l.take(k, l.kinds[k], now); ok {
			lines = append(lines, line)
		}
	}
	return lines
}

// take returns r's line and starts the next if one is due at now; under mu.
func (l *Limiter[K]) take(k K, r *kind, now time.Time) (Line[K], bool) {
	if r.count == 0 || !r.logged.IsZero() && now.Sub(r.logged) < l.every() {
		return Line[K]{}, false
	}
	line := Line[K]{Kind: k, Count: r.count, Since: r.since, Names: r.names, Err: r.err}
	*r = kind{logged: now}
	return line, true
}

// makeRoom makes room for one more kind at now; under mu.
func (l *Limiter[K]) makeRoom(now time.Time) {
	max := l.KindsMax
	if max <= 0 {
		max = DefaultKindsMax
	}
	if l.kinds == nil || len(l.kinds) < max {
		if l.kinds == nil {
			l.kinds = map[K]*kind{}
		}
		return
	}
	kept := l.order[:0]
	for _, k := range l.order {
		if r := l.kinds[k]; !r.logged.IsZero() && now.Sub(r.logged) >= l.every() {
			delete(l.kinds, k)
		} else {
			kept = append(kept, k)
		}
	}
	l.order = kept
	if len(l.kinds) >= max {
		clear(l.kinds)
		l.order = l.order[:0]
	}
}

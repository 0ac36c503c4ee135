package controlplane

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Refused registrations (a full registry) are logged the first time at once, then at most
// once per refusedLogEvery, one line with how many were refused since the last, from when,
// and the first few names they asked for, each quoted: a worker that retries in a loop, or
// a client holding the worker secret that invents names, cannot flood the log, nor write
// into it anything but a quoted string.
const (
	refusedLogEvery = time.Minute
	refusedNamesMax = 5
)

// refusals are the refused registrations not logged yet (ControlPlane.refused, under mu).
type refusals struct {
	count    int
	since    time.Time // the first of them
	names    []string  // the first refusedNamesMax distinct names, as asked
	reason   string    // the last refusal's error
	loggedAt time.Time // the last line
}

// noteRefused counts a refused registration of name at now and logs what is due.
func (cp *ControlPlane) noteRefused(name string, err error, now time.Time) {
	cp.mu.Lock()
	r := &cp.refused
	if r.count == 0 {
		r.since = now
	}
	r.count++
	r.reason = err.Error()
	if len(r.names) < refusedNamesMax && !slices.Contains(r.names, name) {
		r.names = append(r.names, name)
	}
	cp.mu.Unlock()
	cp.logRefused(now)
}

// logRefused writes the refusals line when one is due: some refusals are waiting and the last
// line is refusedLogEvery old (or there was none). The reaper's tick calls it too, so that
// the count at the end of a burst is logged.
func (cp *ControlPlane) logRefused(now time.Time) {
	cp.mu.Lock()
	r := cp.refused
	due := r.count > 0 && (r.loggedAt.IsZero() || now.Sub(r.loggedAt) >= refusedLogEvery)
	if due {
		cp.refused = refusals{loggedAt: now}
	}
	cp.mu.Unlock()
	if !due {
		return
	}
	cp.e.Logger().Warn("worker registrations refused", "refused", r.count, "since", r.since,
		"names", quotedNames(r.names, r.count), "err", r.reason, "nextLineAfter", refusedLogEvery)
}

// quotedNames lists names each quoted (Go syntax: a control character or a quote in one is
// escaped), and how many of count are not listed.
func quotedNames(names []string, count int) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	if count > len(names) {
		b.WriteString(" (" + strconv.Itoa(count-len(names)) + " more refusals)")
	}
	return b.String()
}

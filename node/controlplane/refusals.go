package controlplane

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Refused registrations (a full registry), refused heartbeats (a token no session has, a
// malformed body, a replayed or reordered beat) and refused requests to the other worker
// endpoints (a token no session has, a malformed history batch) are logged the first time at once, then at
// most once per refusedLogEvery, one line of each kind with how many were refused since the
// last, from when, and the first few names they asked for (registrations) or were sent under
// (heartbeats of a session; an unknown token names none) or were sent to (the other endpoints),
// each quoted: a worker that retries
// in a loop, or a client holding the worker secret that invents names or tokens, cannot flood
// the log, nor write into it anything but a quoted string. No token is ever part of a line.
const (
	refusedLogEvery = time.Minute
	refusedNamesMax = 5
)

// refusals are the refused registrations (ControlPlane.refused) or heartbeats
// (ControlPlane.refusedBeats) not logged yet, under mu.
type refusals struct {
	count    int
	since    time.Time // the first of them
	names    []string  // the first refusedNamesMax distinct names, as asked
	reason   string    // the last refusal's error
	loggedAt time.Time // the last line
}

// noteRefused counts a refused registration of name at now and logs what is due.
func (cp *ControlPlane) noteRefused(name string, err error, now time.Time) {
	cp.note(&cp.refused, name, err, now)
}

// noteRefusedBeat counts a refused heartbeat sent under name's session ("" for a token of no
// session) at now and logs what is due.
func (cp *ControlPlane) noteRefusedBeat(name string, err error, now time.Time) {
	cp.note(&cp.refusedBeats, name, err, now)
}

// noteRefusedCall counts a request to a worker endpoint (its mux pattern) refused before its
// handler for reason ("unauthorized": a token of no session; "bad_request") and logs what is due.
// The log line lists the endpoints: an unknown token names no worker.
func (cp *ControlPlane) noteRefusedCall(endpoint, reason string, err error) {
	cp.metrics.callsRefused.WithLabelValues(endpoint, reason).Inc()
	cp.note(&cp.refusedCalls, endpoint, err, cp.e.Now())
}

func (cp *ControlPlane) note(r *refusals, name string, err error, now time.Time) {
	cp.mu.Lock()
	if r.count == 0 {
		r.since = now
	}
	r.count++
	r.reason = err.Error()
	if name != "" && len(r.names) < refusedNamesMax && !slices.Contains(r.names, name) {
		r.names = append(r.names, name)
	}
	cp.mu.Unlock()
	cp.logRefused(now)
}

// logRefused writes each kind's refusals line when one is due: some refusals are waiting and
// the last line is refusedLogEvery old (or there was none). The reaper's tick calls it too, so
// that the count at the end of a burst is logged.
func (cp *ControlPlane) logRefused(now time.Time) {
	cp.logRefusals(&cp.refused, "worker registrations refused", now)
	cp.logRefusals(&cp.refusedBeats, "worker heartbeats refused", now)
	cp.logRefusals(&cp.refusedCalls, "worker requests refused", now)
}

func (cp *ControlPlane) logRefusals(p *refusals, msg string, now time.Time) {
	cp.mu.Lock()
	r := *p
	due := r.count > 0 && (r.loggedAt.IsZero() || now.Sub(r.loggedAt) >= refusedLogEvery)
	if due {
		*p = refusals{loggedAt: now}
	}
	cp.mu.Unlock()
	if !due {
		return
	}
	cp.e.Logger().Warn(msg, "refused", r.count, "since", r.since,
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

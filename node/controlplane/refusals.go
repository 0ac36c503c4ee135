package controlplane

import (
	"strconv"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/refusallog"
)

// Refused registrations (a full registry), refused heartbeats (a token no session has, a
// malformed body, a replayed or reordered beat) and refused requests to the other worker
// endpoints (a token no session has, a malformed history batch) are logged the first time at
// once, then at most once a minute (refusallog), one line of each kind with how many were
// refused since the last, from when, and the first few names they asked for, each quoted. A
// kind is a line's message, endpoint and reason, and the worker whose session sent the
// requests: a second worker's refusals within the minute are logged, naming it. A request
// under a token of no session names no worker, and a registration's name is the requester's
// claim: those are one kind per endpoint and reason, whatever names or tokens a client holding
// the worker secret invents, so it cannot flood the log, nor write into it anything but a
// quoted string. No token is ever part of a line.

// refusalKind is a kind of refusal logged once a minute.
type refusalKind struct {
	msg      string // the line's message
	endpoint string // the mux pattern of a worker endpoint; "" for registrations and heartbeats
	reason   string
	worker   string // the session's worker; "" for a registration or a token of no session
}

// noteRefused counts a refused registration of name at now and logs what is due.
func (cp *ControlPlane) noteRefused(name string, err error, now time.Time) {
	cp.note(refusalKind{msg: "worker registrations refused", reason: "full"}, name, err, now)
}

// noteRefusedBeat counts a heartbeat refused for reason (the heartbeats metric's result),
// sent under worker's session ("" for a token of no session), at now and logs what is due.
func (cp *ControlPlane) noteRefusedBeat(worker, reason string, err error, now time.Time) {
	cp.note(refusalKind{msg: "worker heartbeats refused", reason: reason, worker: worker}, "", err, now)
}

// noteRefusedCall counts a request to a worker endpoint (its mux pattern) refused for reason
// ("unauthorized": a token of no session, worker ""; "bad_request") and logs what is due.
func (cp *ControlPlane) noteRefusedCall(endpoint, reason, worker string, err error) {
	cp.metrics.callsRefused.WithLabelValues(endpoint, reason).Inc()
	cp.note(refusalKind{msg: "worker requests refused", endpoint: endpoint, reason: reason, worker: worker}, "", err, cp.e.Now())
}

func (cp *ControlPlane) note(k refusalKind, name string, err error, now time.Time) {
	if line, due := cp.refusedLog.Note(k, name, err, now); due {
		cp.logRefusal(line)
	}
}

// logRefused writes the lines due at now, the capacity API's among them: refusals waiting
// whose kind's last line is a minute old. The reaper's tick calls it, so that the count at the
// end of a burst is logged.
func (cp *ControlPlane) logRefused(now time.Time) {
	for _, line := range cp.refusedLog.Due(now) {
		cp.logRefusal(line)
	}
	if cp.capRefused != nil {
		cp.capRefused(now)
	}
}

func (cp *ControlPlane) logRefusal(line refusallog.Line[refusalKind]) {
	k := line.Kind
	attrs := []any{"refused", line.Count, "since", line.Since}
	if k.worker != "" {
		attrs = append(attrs, "worker", k.worker)
	}
	if k.endpoint != "" {
		attrs = append(attrs, "endpoint", k.endpoint)
	}
	attrs = append(attrs, "reason", k.reason)
	if len(line.Names) > 0 {
		attrs = append(attrs, "names", quotedNames(line.Names, line.Count))
	}
	if line.Err != nil {
		attrs = append(attrs, "err", redact.Error(line.Err))
	}
	attrs = append(attrs, "nextLineAfter", refusallog.DefaultEvery)
	cp.e.Logger().Warn(k.msg, attrs...)
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

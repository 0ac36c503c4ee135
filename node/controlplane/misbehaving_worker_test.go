package controlplane

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/history"
)

// TestAMisbehavingWorkersRefusalsAreCountedAndLogged: a worker holding a valid session sends
// the lease and history endpoints what it should not: a renewal of its own lease after the
// sweep took it, a renewal and a release of another worker's lease, a lease of a cluster the
// configuration does not have, garbage bodies, a renewal batch past its bound, a malformed lease
// id, a history batch that is none or of another media type; and requests under a token of no session. Each is refused
// with its status and a message naming what was wrong, counted in its metric
// (queryflux_capacity_refused_total{op,reason} or
// queryflux_controlplane_worker_requests_refused_total{endpoint,reason}) and logged, at most one
// line a minute of each kind, with no token or secret in it; and the other worker's lease and
// the cap stay as they were. Before, garbage bodies, malformed ids, stale renewals and requests
// under an unknown token were answered but neither counted nor logged.
func TestAMisbehavingWorkersRefusalsAreCountedAndLogged(t *testing.T) {
	h, store, sw, metrics := authority(t, 30*time.Second, &recordingFence{done: true})
	h.cp.MountHistory(history.NewMemory(100))
	good, rogue := h.register("good"), h.register("rogue")
	ref := func(l *capacity.Lease) string { return fmt.Sprintf(`{"id":%q,"generation":%d}`, l.ID, l.Generation) }
	code, rl, raw := h.acquireLease(rogue, `{"cluster":"c1","ttlMillis":30000}`)
	if code != 200 || !rl.Granted {
		t.Fatalf("the rogue worker's acquire: %d %s", code, raw)
	}
	h.e.Advance(20 * time.Second)
	code, gl, raw := h.acquireLease(good, `{"cluster":"c1","ttlMillis":30000}`)
	if code != 200 || !gl.Granted {
		t.Fatalf("the good worker's acquire: %d %s", code, raw)
	}
	// The rogue's lease runs out and the sweep frees it; the good one's has 19 s left.
	h.e.Advance(11 * time.Second)
	if freed, err := sw.SweepOnce(context.Background(), time.Minute); err != nil || len(freed) != 1 || freed[0].ID != rl.Lease.ID {
		t.Fatalf("the sweep freed %+v (%v), want the rogue's lease", freed, err)
	}

	const forged = "qfw_forged-session-token"
	many := strings.TrimSuffix(strings.Repeat(ref(gl.Lease)+",", capacity.RenewBatchMax+1), ",")
	type counted struct{ op, reason string } // capacity's; op "" for the control plane's (endpoint, reason)
	cases := []struct {
		what, token, path, media, body string
		code                           int
		says                           string
		metric                         counted
	}{
		{"a renewal of its lease after the sweep took it", rogue, capacity.PathRenew, capacity.MediaJSON,
			`{"lease":` + ref(rl.Lease) + `,"ttlMillis":30000}`, 409, "stale lease generation", counted{"renew", "stale"}},
		{"a renewal of the good worker's lease", rogue, capacity.PathRenew, capacity.MediaJSON,
			`{"lease":` + ref(gl.Lease) + `,"ttlMillis":30000}`, 403, "another worker", counted{"renew", "not-holder"}},
		{"a release of the good worker's lease", rogue, capacity.PathReleaseBatch, capacity.MediaJSON,
			`{"leases":[` + ref(gl.Lease) + `]}`, 403, "another worker", counted{"release", "not-holder"}},
		{"a lease of a cluster the configuration does not have", rogue, capacity.PathAcquire, capacity.MediaJSON,
			`{"cluster":"c-ghost","ttlMillis":30000}`, 400, `unknown cluster \"c-ghost\"`, counted{"acquire", "unknown-cluster"}},
		{"a garbage acquire", rogue, capacity.PathAcquire, capacity.MediaJSON, `{"cluster":["c1"]}`, 400, "cluster", counted{"acquire", "bad-request"}},
		{"a garbage renewal batch", rogue, capacity.PathRenewBatch, capacity.MediaJSON, `{"leases":"all"}`, 400, "leases", counted{"renew", "bad-request"}},
		{"a garbage release batch", rogue, capacity.PathReleaseBatch, capacity.MediaJSON, `[1,2,3]`, 400, "object", counted{"release", "bad-request"}},
		{"a renewal batch past its bound", rogue, capacity.PathRenewBatch, capacity.MediaJSON,
			`{"leases":[` + many + `],"ttlMillis":30000}`, 400, fmt.Sprintf("at most %d", capacity.RenewBatchMax), counted{"renew", "invalid"}},
		{"a malformed lease id", rogue, capacity.PathRenew, capacity.MediaJSON,
			`{"lease":{"id":"c1","generation":1},"ttlMillis":30000}`, 400, "c1", counted{"renew", "invalid"}},
		{"a release of a malformed lease id", rogue, capacity.PathReleaseBatch, capacity.MediaJSON,
			`{"leases":[{"id":"c1#x","generation":1}]}`, 400, "c1#x", counted{"release", "invalid"}},
		{"an acquire under a token of no session", forged, capacity.PathAcquire, capacity.MediaJSON,
			`{"cluster":"c1","ttlMillis":30000}`, 401, "", counted{"", "POST " + capacity.PathAcquire + " unauthorized"}},
		{"a renewal under the worker secret", secret, capacity.PathRenew, capacity.MediaJSON,
			`{"lease":` + ref(gl.Lease) + `,"ttlMillis":30000}`, 401, "", counted{"", "POST " + capacity.PathRenew + " unauthorized"}},
		{"a history batch under a token of no session", forged, history.PathWorkerHistory, history.MediaQueryRecords,
			`{"batchId":"b1","records":[]}`, 401, "register again", counted{"", "POST " + history.PathWorkerHistory + " unauthorized"}},
		{"a history batch of another media type", rogue, history.PathWorkerHistory, "text/plain",
			`{"batchId":"b1","records":[]}`, 415, "Content-Type", counted{"", "POST " + history.PathWorkerHistory + " bad_request"}},
		{"a history batch that is none", rogue, history.PathWorkerHistory, history.MediaQueryRecords,
			`{"batchId":"b1","records":"everything"}`, 400, "records", counted{"", "POST " + history.PathWorkerHistory + " bad_request"}},
	}
	value := func(m counted) float64 {
		if m.op != "" {
			return counterValue(t, metrics.Refused.WithLabelValues(m.op, m.reason))
		}
		endpoint, reason, _ := strings.Cut(strings.TrimPrefix(m.reason, "POST "), " ")
		return counterValue(t, h.cp.metrics.callsRefused.WithLabelValues("POST "+endpoint, reason))
	}
	for _, c := range cases {
		before := value(c.metric)
		code, body := h.do("POST", c.path, c.token, c.media, c.body)
		if code != c.code || !strings.Contains(string(body), c.says) || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s: %d %.300s; want %d saying %s", c.what, code, body, c.code, c.says)
		}
		if n := value(c.metric) - before; n != 1 {
			t.Errorf("%s: counted %v times in %v, want once", c.what, n, c.metric)
		}
	}

	// The good worker's lease is held and renewable, and the cap (2) is as configured.
	if code, body := h.do("POST", capacity.PathRenew, good, capacity.MediaJSON, `{"lease":`+ref(gl.Lease)+`,"ttlMillis":30000}`); code != 200 {
		t.Errorf("the good worker's renewal after the misbehaviour: %d %s", code, body)
	}
	if code, got, raw := h.acquireLease(good, `{"cluster":"c1","ttlMillis":30000}`); code != 200 || !got.Granted {
		t.Errorf("the good worker's second lease (cap 2): %d %s", code, raw)
	}
	if code, got, raw := h.acquireLease(rogue, `{"cluster":"c1","cap":100,"ttlMillis":30000}`); code != 200 || got.Granted {
		t.Errorf("a third lease (cap 2): %d %s", code, raw)
	}
	if ls, _ := store.List(context.Background(), "c1"); len(ls) != 2 {
		t.Errorf("c1 holds %d leases, want the good worker's 2: %+v", len(ls), ls)
	}

	// A worker that repeats a refused request in a loop writes one line of its kind a minute.
	lines := func(kind string) int { return strings.Count(h.e.logs.String(), kind) }
	garbage, unknown, foreign := `reason=bad-request`, "worker requests refused", "another worker's lease"
	g0, u0, f0 := lines(garbage), lines(unknown), lines(foreign)
	renewForeign := func() {
		h.do("POST", capacity.PathRenew, rogue, capacity.MediaJSON, `{"lease":`+ref(gl.Lease)+`,"ttlMillis":30000}`)
	}
	for range 20 {
		h.do("POST", capacity.PathAcquire, rogue, capacity.MediaJSON, `{"cluster":["c1"]}`)
		renewForeign()
		h.do("POST", capacity.PathAcquire, forged, capacity.MediaJSON, `{"cluster":"c1"}`)
	}
	if g, u, f := lines(garbage)-g0, lines(unknown)-u0, lines(foreign)-f0; g != 0 || u != 0 || f != 0 {
		t.Errorf("20 more refusals of each kind within the minute wrote %d, %d and %d lines, want none", g, u, f)
	}
	// Another worker's refusal of the same kind within the minute is logged, naming it.
	third := h.register("third")
	h.do("POST", capacity.PathRenew, third, capacity.MediaJSON, `{"lease":`+ref(gl.Lease)+`,"ttlMillis":30000}`)
	if lines(foreign)-f0 != 1 || !strings.Contains(h.e.logs.String(), "worker=third") {
		t.Errorf("another worker's renewal of a lease not its own, within the minute: %d lines, want one naming it:\n%s", lines(foreign)-f0, h.e.logs.String())
	}
	badBatch := `worker=%s endpoint="POST /worker/history" reason=bad_request`
	h.do("POST", history.PathWorkerHistory, third, history.MediaQueryRecords, `{"batchId":"b1","records":"everything"}`)
	if strings.Count(h.e.logs.String(), fmt.Sprintf(badBatch, "rogue")) != 1 || strings.Count(h.e.logs.String(), fmt.Sprintf(badBatch, "third")) != 1 {
		t.Errorf("another worker's malformed history batch, within the minute: want a line naming it beside the rogue's:\n%s", h.e.logs.String())
	}
	// The tick a minute on logs the rogue's refusals since its first lines; its next ones wait
	// for a minute after that.
	h.e.Advance(61 * time.Second)
	h.cp.logRefused(h.e.Now())
	h.do("POST", capacity.PathAcquire, rogue, capacity.MediaJSON, `{"cluster":["c1"]}`)
	renewForeign()
	log := h.e.logs.String()
	if lines(foreign)-f0 != 2 {
		t.Errorf("a minute on, %d lines of renewals of another worker's lease, want two (one a minute of each worker)", lines(foreign)-f0)
	}
	if lines(garbage)-g0 != 1 || !regexp.MustCompile(`op=acquire reason=bad-request worker=rogue/[0-9a-f]+ refused=20 `).MatchString(log) || lines(unknown)-u0 != 3 || // third's, then the forged acquires' and the rogue's second batch's
		!strings.Contains(log, `refused=20 since=2026-01-01T00:00:31.000Z endpoint="POST /worker/capacity/acquire" reason=unauthorized`) {
		t.Errorf("a minute on, the log: %s\nwant one line of each kind counting the refusals since", log)
	}
	for _, kind := range []string{"reason=stale", "another worker's lease", "unknown cluster", "reason=invalid",
		"op=release reason=bad-request", `endpoint="POST /worker/history" reason=unauthorized`} {
		if !strings.Contains(log, kind) {
			t.Errorf("no log line of %s", kind)
		}
	}
	for _, s := range []string{good, rogue, secret, forged, "qfw_"} {
		if strings.Contains(log, s) {
			t.Errorf("the log holds a token or the worker secret %q", s)
		}
	}
}

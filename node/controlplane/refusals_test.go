package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/workerapi"
)

// refusedLines are the log's lines about refused registrations.
func refusedLines(e *manualEnv) []string {
	var out []string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "refused") {
			out = append(out, l)
		}
	}
	return out
}

// TestRefusedRegistrationsLogOneLinePerInterval: a full registry refusing 60 registrations in
// a burst (each a new name, as a client holding the worker secret that invents them sends)
// logs the first at once and the other 59 in one line a minute later, at the reaper's tick,
// with their count and the first names, quoted; nothing more when nothing more is refused.
// Before: one line per attempt.
func TestRefusedRegistrationsLogOneLinePerInterval(t *testing.T) {
	e := newManualEnv()
	cfg := testConfig
	cfg.MaxWorkers = 1
	cp := New(e, cfg, registry.NewMemory())
	if err := cp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: e, cp: cp}
	h.register("real")
	refuse := func(name string) {
		t.Helper()
		code, body := h.do("POST", workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, fmt.Sprintf(`{"name":%q,"version":"1"}`, name))
		if code != 429 {
			t.Fatalf("register %s into a full registry: %d %s", name, code, body)
		}
	}
	for i := range 30 {
		refuse(fmt.Sprintf("fake-%d", i))
	}
	cp.Tick(context.Background(), e.Advance(30*time.Second))
	for i := range 30 {
		refuse(fmt.Sprintf("fake-%d", 30+i))
	}
	lines := refusedLines(e)
	if len(lines) != 1 || !strings.Contains(lines[0], "refused=1 ") || !strings.Contains(lines[0], `\"fake-0\"`) {
		t.Fatalf("after 60 refusals in 30 s: %q, want the first one's line only", lines)
	}
	cp.Tick(context.Background(), e.Advance(31*time.Second))
	cp.Tick(context.Background(), e.Advance(2*time.Minute))
	lines = refusedLines(e)
	if len(lines) != 2 || !strings.Contains(lines[1], "refused=59 ") ||
		!strings.Contains(lines[1], `\"fake-1\", \"fake-2\", \"fake-3\", \"fake-4\", \"fake-5\" (54 more refusals)`) {
		t.Fatalf("a minute after the first line: %q, want one line counting the 59 others", lines)
	}
}

// TestRefusedNamesAreQuoted: the names in the refusals line are quoted, a newline or a quote
// in one escaped, so whatever a name holds stays one value of one line. (The API refuses
// such names before: this is the line's own guarantee.)
func TestRefusedNamesAreQuoted(t *testing.T) {
	e := newManualEnv()
	cp := New(e, testConfig, registry.NewMemory())
	cp.noteRefused("evil\nlevel=ERROR msg=\"forged\"", errors.New("full"), e.Now())
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `evil\\nlevel=ERROR msg=\\\"forged\\\"`) {
		t.Fatalf("log: %q, want one line, the name escaped", lines)
	}
	if got, want := quotedNames([]string{"a\nb", `c"d`}, 3), `"a\nb", "c\"d" (1 more refusals)`; got != want {
		t.Fatalf("quotedNames: %s, want %s", got, want)
	}
}

// TestCapacityRefusalsAreLoggedAtTheTick: a worker renewing another worker's lease 20 times in
// a burst gets one line at once; the other 19 are logged at the control plane's first tick a
// minute on, with their count and since when, though the worker sent nothing more; the ticks
// after that have nothing to log. Before, they waited for that kind's next refusal, which a
// worker that stopped never sends.
func TestCapacityRefusalsAreLoggedAtTheTick(t *testing.T) {
	h, _, _, _ := authority(t, 30*time.Second, nil)
	good, rogue := h.register("good"), h.register("rogue")
	code, gl, raw := h.acquireLease(good, `{"cluster":"c1","ttlMillis":30000}`)
	if code != 200 || !gl.Granted {
		t.Fatalf("the good worker's acquire: %d %s", code, raw)
	}
	start := h.e.Now()
	foreign := fmt.Sprintf(`{"lease":{"id":%q,"generation":%d},"ttlMillis":30000}`, gl.Lease.ID, gl.Lease.Generation)
	for i := range 20 {
		if code, body := h.do("POST", capacity.PathRenew, rogue, capacity.MediaJSON, foreign); code != 403 {
			t.Fatalf("renewal %d of the good worker's lease: %d %s, want 403", i, code, body)
		}
		h.e.Advance(time.Second)
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(h.e.logs.String(), "\n") {
			if strings.Contains(l, "another worker's lease") {
				out = append(out, l)
			}
		}
		return out
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "refused=1 ") {
		t.Fatalf("after the burst: %q, want the first refusal's line only", got)
	}
	h.cp.Tick(context.Background(), h.e.Advance(30*time.Second)) // 50 s after the first line
	if got := lines(); len(got) != 1 {
		t.Fatalf("a tick within the minute: %q, want no new line", got)
	}
	h.cp.Tick(context.Background(), h.e.Advance(11*time.Second))
	since := start.Add(time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
	got := lines()
	if len(got) != 2 || !strings.Contains(got[1], "refused=19 since="+since) || !strings.Contains(got[1], "worker=rogue") ||
		!strings.Contains(got[1], "op=renew reason=not-holder") {
		t.Fatalf("the tick a minute on: %q, want a second line counting rogue's 19 renewals since %s", got, since)
	}
	h.cp.Tick(context.Background(), h.e.Advance(2*time.Minute))
	if got := lines(); len(got) != 2 {
		t.Fatalf("a tick with nothing refused since: %q, want no new line", got)
	}
	for _, s := range []string{good, rogue, secret} {
		if strings.Contains(h.e.logs.String(), s) {
			t.Errorf("the log holds a token or the worker secret %q", s)
		}
	}
}

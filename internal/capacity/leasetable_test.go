package capacity

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of testdata/leasetable transcripts")

// TestLeaseTableTranscripts runs every transcript in testdata/leasetable: commands fed to a
// leaseTable, each followed by "----" and the output it must print (datadriven style).
// go test -run TestLeaseTableTranscripts -rewrite rewrites the outputs; read the diff.
func TestLeaseTableTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/leasetable/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runTranscript(t, f) })
	}
}

// transcriptCase is one command of a transcript and the output it must print.
type transcriptCase struct {
	line     int
	cmd      string
	expected string
}

func readTranscript(t *testing.T, path string) (cases []transcriptCase, comments map[int][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	comments = map[int][]string{} // comment and blank lines before case i
	sc := bufio.NewScanner(f)
	n := 0
	var pending []string
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			pending = append(pending, line)
			continue
		}
		c := transcriptCase{line: n, cmd: line}
		if !sc.Scan() || sc.Text() != "----" {
			t.Fatalf("%s:%d: command %q is not followed by ----", path, n, line)
		}
		n++
		var out []string
		for sc.Scan() {
			n++
			if sc.Text() == "" {
				break
			}
			out = append(out, sc.Text())
		}
		c.expected = strings.Join(out, "\n")
		comments[len(cases)] = pending
		pending = nil
		cases = append(cases, c)
	}
	comments[len(cases)] = pending
	return cases, comments
}

func runTranscript(t *testing.T, path string) {
	cases, comments := readTranscript(t, path)
	h := &tableHarness{}
	var out strings.Builder
	for i, c := range cases {
		for _, l := range comments[i] {
			out.WriteString(l + "\n")
		}
		got := h.run(t, path, c)
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", c.cmd, got)
		if !*rewrite && got != c.expected {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, c.line, c.cmd, got, c.expected)
		}
	}
	if *rewrite {
		text := strings.TrimRight(out.String(), "\n") + "\n"
		for _, l := range comments[len(cases)] {
			if l != "" {
				text += l + "\n"
			}
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// t0 is the transcripts' time zero: times are written as offsets from it (at=1.5s).
var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// tableHarness holds a table under test and the names it gave to what the table handed out.
type tableHarness struct {
	t     *leaseTable
	slots map[uint64]*slotState
	batch []queuedRelease // the batch last taken with "flush"
	lines []string        // the output of the command running
}

type transcriptArgs struct {
	t     *testing.T
	where string
	kv    map[string]string
}

func (a transcriptArgs) has(k string) bool { _, ok := a.kv[k]; return ok }

func (a transcriptArgs) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	if def == "" {
		a.t.Fatalf("%s: argument %s= is missing", a.where, k)
	}
	return def
}

func (a transcriptArgs) int(k string, def int) int {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		a.t.Fatalf("%s: %s=%q: %v", a.where, k, v, err)
	}
	return n
}

func (a transcriptArgs) dur(k string, def time.Duration) time.Duration {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.t.Fatalf("%s: %s=%q: %v", a.where, k, v, err)
	}
	return d
}

func (a transcriptArgs) at(k string) time.Time { return t0.Add(a.dur(k, 0)) }

func (h *tableHarness) slot(a transcriptArgs) *slotState {
	id := uint64(a.int("slot", 0))
	s, ok := h.slots[id]
	if !ok {
		panic(fmt.Sprintf("no slot %d", id)) // printed: the transcript shows it

	}
	return s
}

// off prints a time as its offset from t0.
func off(at time.Time) string { return at.Sub(t0).String() }

// run runs one command and returns what it printed: its answer, the effects, the table's
// state. A panic (a violated invariant) is printed too.
func (h *tableHarness) run(t *testing.T, path string, c transcriptCase) (out string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			out = strings.Join(append(h.lines, fmt.Sprintf("panic: %v", r), h.state()), "\n")
		}
	}()
	fields := strings.Fields(c.cmd)
	a := transcriptArgs{t: t, where: fmt.Sprintf("%s:%d", path, c.line), kv: map[string]string{}}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		a.kv[k] = v
	}
	if h.t == nil && fields[0] != "config" {
		t.Fatalf("%s: the first command must be config", a.where)
	}
	h.lines = nil
	say := func(format string, args ...any) { h.lines = append(h.lines, fmt.Sprintf(format, args...)) }
	var e effects
	switch fields[0] {
	case "config":
		h.t = newLeaseTable(tableConfig{
			LeaseTTL: a.dur("ttl", 30*time.Second), DriftMargin: a.dur("drift", 2*time.Second),
			RenewEvery: a.dur("renew", 10*time.Second), OnLeaseLost: a.str("lost", OnLeaseLostCancel),
			OnUnavailable: a.str("unavailable", OnUnavailableFailClosed),
			Reuse:         a.has("reuse"), Checks: a.has("checks"), AcquireWaits: a.has("waits"),
			ReleaseQueueMax: a.int("queuemax", 0),
		})
		h.slots = map[uint64]*slotState{}
	case "take":
		s, te := h.t.takeIdle(a.str("c", ""), a.int("limit", 0), uint64(a.int("affinity", 0)), a.at("at"), nil)
		e = te
		if s == nil {
			say("none")
		} else {
			h.slots[s.id] = s
			say("slot %d %s (reused)", s.id, s.hl.lease.ID)
		}
	case "reserve":
		say("%v", map[bool]string{true: "ask", false: "full"}[h.t.reserve(a.str("c", ""), a.int("limit", 0))])
	case "grant":
		cl := a.str("c", "")
		l := Lease{ID: LeaseID(cl, int64(a.int("gen", 1))), Cluster: cl, Generation: int64(a.int("gen", 1)),
			TTLMillis: a.dur("ttl", 0).Milliseconds()}
		s, late, ge := h.t.granted(cl, l, a.at("sent"), uint64(a.int("affinity", 0)), a.at("at"))
		e = ge
		if late {
			say("late: %s released", l.ID)
		} else {
			h.slots[s.id] = s
			say("slot %d %s fence=%s renew=%s", s.id, l.ID, off(s.hl.fenceAt), off(s.hl.renewAt))
		}
	case "churn": // n leases of c granted and released at once (for batches)
		cl, n, at := a.str("c", ""), a.int("n", 0), a.at("at")
		for i := range n {
			if !h.t.reserve(cl, n) {
				panic(fmt.Sprintf("churn: reserve %d of %d refused", i+1, n))
			}
			gen := int64(a.int("gen", 1) + i)
			s, _, _ := h.t.granted(cl, Lease{ID: LeaseID(cl, gen), Cluster: cl, Generation: gen}, at, 0, at)
			e.add(h.t.release(s, at))
		}
		say("%d released", n)
	case "deny":
		h.t.denied(a.str("c", ""))
	case "fail":
		h.t.failed(a.at("at"))
	case "unreachable?":
		say("%v", h.t.unreachable(a.at("at")))
	case "unavailable":
		say("%v", [...]string{failClosed: "fail closed", admitLocal: "local slot", localFull: "full"}[h.t.unavailable(a.str("c", ""), a.int("limit", 0))])
	case "release-local":
		h.t.releaseLocal(a.str("c", ""))
	case "contention":
		e = h.t.contention(a.str("c", ""), a.str("contended", "") == "true", a.at("sent"))
	case "renew-answer": // a renewal batch's answer about clusters c (comma-separated), uncontended those listed
		contended := map[string]bool{}
		for _, c := range strings.FieldsFunc(a.kv["c"], func(r rune) bool { return r == ',' }) { // c= : said nothing
			contended[c] = !slices.Contains(strings.Split(a.kv["uncontended"], ","), c)
		}
		e = h.t.renewedContention(contended, a.at("sent"))
	case "release":
		e = h.t.release(h.slot(a), a.at("at"))
	case "lost":
		say("%v", h.t.lostAt(h.slot(a), a.at("at")))
	case "on-lost":
		name := a.str("fn", "")
		if h.t.onLost(h.slot(a), func() { say("cancel %s", name) }) {
			say("run %s now", name)
		}
	case "tick":
		now := a.at("at")
		e = h.t.fence(now)
		var ids []string
		for _, s := range h.t.dueRenewals(now) {
			ids = append(ids, fmt.Sprint(s.id))
		}
		if len(ids) > 0 {
			say("renew slots %s", strings.Join(ids, " "))
		}
		say("next work %s", off(h.t.nextWork(now)))
	case "renew":
		ref, fenceFirst, ok := h.t.beginRenew(h.slot(a), a.at("at"))
		if ok {
			say("send %s until %s", ref.ID, off(fenceFirst))
		} else {
			say("skip")
		}
	case "renewed":
		s := h.slot(a)
		l := s.hl.lease
		l.TTLMillis = a.dur("ttl", 0).Milliseconds()
		h.t.renewed(s, a.at("sent"), l)
		say("fence=%s renew=%s", off(s.hl.fenceAt), off(s.hl.renewAt))
	case "renew-refused":
		h.t.renewRefused(h.slot(a), a.at("sent"))
	case "renew-failed":
		s := h.slot(a)
		h.t.renewFailed(s, a.at("at"))
		say("renew=%s", off(s.hl.renewAt))
	case "flush":
		h.batch = h.t.takeBatch()
		say("batch %s", refList(h.batch))
	case "landed":
		e = h.t.landed(h.batch)
	case "flush-failed":
		e = h.t.flushFailed(h.batch, a.at("at"))
	case "put-back":
		e = h.t.putBack(h.batch)
	case "expire":
		next, xe := h.t.expireIdle(a.at("at"))
		e = xe
		if next.IsZero() {
			say("reaper waits")
		} else {
			say("reaper wakes at %s", off(next))
		}
	case "stop":
		e = h.t.stop()
	default:
		t.Fatalf("%s: unknown command %q", a.where, fields[0])
	}
	describeEffects(e, say)
	return strings.Join(append(h.lines, h.state()), "\n")
}

// describeEffects says what the driver would do, one line per kind.
func describeEffects(e effects, say func(string, ...any)) {
	for _, l := range e.lost {
		say("lost %s (%s)", l.cluster, l.policy)
	}
	for _, d := range e.dropped {
		say("dropped %s (%s)", d.cluster, d.reason)
	}
	if e.queueFull != nil {
		say("warn: release queue full at %d", e.queueFull.queued)
	}
	var wake []string
	for _, w := range []struct {
		on   bool
		name string
	}{{e.wakeKeeper, "keeper"}, {e.wakeReaper, "reaper"}, {e.wakeFreed, "freed"}, {e.wakeFlusher, "flusher"}} {
		if w.on {
			wake = append(wake, w.name)
		}
	}
	if len(wake) > 0 {
		say("wake %s", strings.Join(wake, " "))
	}
	for _, fn := range e.cancel {
		fn() // the harness's callbacks say their name
	}
}

// state prints the table's counts per cluster, and its release queue.
func (h *tableHarness) state() string {
	t := h.t
	clusters := map[string]bool{}
	for _, m := range []map[string]int{t.local, t.pending, t.asking} {
		for c := range m {
			clusters[c] = true
		}
	}
	for c := range t.held {
		clusters[c] = true
	}
	for c := range t.idle {
		clusters[c] = true
	}
	var parts []string
	names := make([]string, 0, len(clusters))
	for c := range clusters {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, c := range names {
		parts = append(parts, fmt.Sprintf("%s: held=%d idle=%d asking=%d pending=%d local=%d occupied=%d",
			c, t.heldOf(c), len(t.idleOf(c)), t.asking[c], t.pending[c], t.local[c], t.occupied(c)))
	}
	parts = append(parts, "queue "+refList(t.queue))
	return strings.Join(parts, "; ")
}

// refList prints the leases of a batch or queue: all of them when few, else the first and last.
func refList(batch []queuedRelease) string {
	var ids []string
	for _, q := range batch {
		ids = append(ids, q.ref.ID)
	}
	if len(ids) > 6 {
		return fmt.Sprintf("%d [%s ... %s]", len(ids), strings.Join(ids[:3], " "), strings.Join(ids[len(ids)-3:], " "))
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// TestLeaseTableInvariantsPanic: the table refuses, loudly, to renew or reuse a lease it has
// released, or to count a lease back it never lent.
func TestLeaseTableInvariantsPanic(t *testing.T) {
	cfg := tableConfig{LeaseTTL: 30 * time.Second, DriftMargin: 2 * time.Second, RenewEvery: 10 * time.Second,
		OnLeaseLost: OnLeaseLostCancel, Reuse: true}
	grant := func(t *leaseTable, gen int64) *slotState {
		if !t.reserve("c", 10) {
			panic("reserve refused")
		}
		s, _, _ := t.granted("c", Lease{ID: LeaseID("c", gen), Cluster: "c", Generation: gen}, t0, 0, t0)
		return s
	}
	for _, tc := range []struct {
		name, want string
		run        func(t *leaseTable)
	}{
		{"renewed after release", "lease c#1 renewed after its release", func(t *leaseTable) {
			s := grant(t, 1)
			s.hl.releasing = true // as if a bug had queued its release while the slot runs
			t.beginRenew(s, t0.Add(10*time.Second))
		}},
		{"slot released twice", "slot of lease c#1 released twice", func(t *leaseTable) {
			s := grant(t, 1)
			grant(t, 2)
			t.release(s, t0)
			t.release(s, t0)
		}},
		{"released twice", "lease c#1 released twice", func(t *leaseTable) {
			s := grant(t, 1)
			t.queueRelease(s.hl)
			t.release(s, t0)
		}},
		{"idle taken after release", "idle lease c#1 taken after its release", func(t *leaseTable) {
			t.contention("c", false, t0)
			s := grant(t, 1)
			t.release(s, t0)
			(*t.idle["c"])[0].hl.releasing = true
			t.takeIdle("c", 10, 0, t0, nil)
		}},
		{"denied without asking", `acquires in flight of "c" went negative`, func(t *leaseTable) { t.denied("c") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Fatalf("panic %v, want one saying %q", r, tc.want)
				}
			}()
			tc.run(newLeaseTable(cfg))
		})
	}
}

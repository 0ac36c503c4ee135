package scenarios

// Shrinking a failing run: with the seed fixed, drop timeline events (halves first, then
// smaller chunks, down to one at a time) and shorten the duration while the same check still
// fails the same way, so a failure is reported with the few faults that cause it, and says so
// when it cannot be shrunk.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Shrunk is a minimal failing variant of a scenario for one seed.
type Shrunk struct {
	Seed     uint64
	Failing  []string // the check kept failing, as "name (kind)"
	Timeline []*Event // the remaining events
	Duration time.Duration
	Runs     int     // runs it took
	Result   *Result // the shrunk run's result
	Original int     // events before shrinking
	// Why says, when nothing could be removed or shortened, why not.
	Why string

	target, kind string
	origDur      time.Duration
	rejected     map[string]int // candidates that did not count, by reason
	example      map[string]string
}

// Shrink reduces sc's timeline and duration for seed while the first check that failed in res
// keeps failing the same way: the same check, with the same kind of violation (CheckResult.Kind),
// and no new failure of the run itself. A variant that does not validate (a check window beyond
// the shortened duration, say) never counts. maxRuns bounds the work (0: 200 runs).
func Shrink(sc *Scenario, seed uint64, res *Result, maxRuns int) *Shrunk {
	if maxRuns <= 0 {
		maxRuns = 200
	}
	out := &Shrunk{Seed: seed, Timeline: sc.Timeline, Duration: sc.Duration, Result: res, Original: len(sc.Timeline),
		origDur: sc.Duration, rejected: map[string]int{}, example: map[string]string{}}
	target := shrinkTarget(res)
	if target == nil {
		out.Why = "no check failed"
		return out
	}
	out.target, out.kind = target.Name, target.Kind
	out.Failing = []string{fmt.Sprintf("%s (%s)", target.Name, target.Kind)}
	runFailed := !res.Checks[0].Pass
	stillFails := func(tl []*Event, d time.Duration) bool {
		if out.Runs >= maxRuns {
			out.reject("the run budget was spent", fmt.Sprintf("%d runs", maxRuns))
			return false
		}
		out.Runs++
		v := *sc
		v.Timeline, v.Duration = tl, d
		r := Run(&v, seed, RunOpts{})
		if ok, why, detail := out.sameFailure(r, runFailed); !ok {
			out.reject(why, detail)
			return false
		}
		out.Result = r
		return true
	}
	events := slices.Clone(sc.Timeline)
	for chunk := max(len(events)/2, 1); chunk >= 1 && len(events) > 0; chunk /= 2 {
		for i := 0; i < len(events); {
			cand := slices.Concat(events[:i], events[min(i+chunk, len(events)):])
			if stillFails(cand, out.Duration) {
				events = cand
			} else {
				i += chunk
			}
		}
	}
	out.Timeline = events
	// Shorten the run: halve the duration while it still covers the events and still fails.
	for {
		d := out.Duration / 2
		last := time.Duration(0)
		for _, ev := range events {
			last = max(last, ev.At)
		}
		if d < last || d < time.Second {
			out.reject("a shorter run would end before the last event or under 1s", fmt.Sprintf("%v", d))
			break
		}
		if !stillFails(events, d) {
			break
		}
		out.Duration = d
	}
	if len(out.Timeline) == out.Original && out.Duration == out.origDur {
		out.Why = out.whyNot()
	}
	return out
}

// shrinkTarget is the check the shrinker keeps failing: the first failing check other than
// run, or run when it is the only one.
func shrinkTarget(r *Result) *CheckResult {
	var run *CheckResult
	for i := range r.Checks {
		c := &r.Checks[i]
		switch {
		case c.Pass:
		case c.Name == "run":
			run = c
		default:
			return c
		}
	}
	return run
}

// sameFailure reports whether r fails the target check the same way (and why not).
func (s *Shrunk) sameFailure(r *Result, runFailed bool) (bool, string, string) {
	if r.Invalid {
		return false, "the variant did not validate", firstFailure(r)
	}
	if !runFailed && !r.Checks[0].Pass {
		return false, "the run itself failed", r.Checks[0].Detail
	}
	for _, c := range r.Checks {
		if c.Name != s.target {
			continue
		}
		switch {
		case c.Pass:
			return false, "the check passed", ""
		case c.Kind != s.kind:
			return false, "the check failed another way", c.Kind
		}
		return true, "", ""
	}
	return false, "the check did not run", ""
}

func firstFailure(r *Result) string {
	for _, c := range r.Checks {
		if !c.Pass {
			return c.Name + ": " + c.Detail
		}
	}
	return ""
}

func (s *Shrunk) reject(why, detail string) {
	s.rejected[why]++
	if _, ok := s.example[why]; !ok && detail != "" {
		s.example[why] = detail
	}
}

// whyNot explains a failure that could not be shrunk at all.
func (s *Shrunk) whyNot() string {
	if s.Original == 0 && s.origDur < 2*time.Second {
		return "no timeline event to drop and the run is already as short as it may be"
	}
	reasons := slices.Sorted(maps.Keys(s.rejected))
	var parts []string
	for _, why := range reasons {
		p := fmt.Sprintf("%s (%d)", why, s.rejected[why])
		if ex := s.example[why]; ex != "" {
			p += ": " + firstLine(ex)
		}
		parts = append(parts, p)
	}
	what := "every timeline event and the full duration are needed"
	if s.Original == 0 {
		what = "there is no timeline event to drop, and the full duration is needed"
	}
	return fmt.Sprintf("%s: every variant tried was rejected: %s", what, strings.Join(parts, "; "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// FailureKinder is a check that says how it failed, in words stable across seeds and
// timelines (which oracle, which bound, no counts), so the shrinker can tell the same failure
// from another. A check without it is judged by the shape of its detail.
type FailureKinder interface {
	FailureKind(w *World) string
}

// failureKind is a failing check's kind: its own word, or its detail with the numbers blanked.
func failureKind(w *World, c Check, detail string) string {
	if k, ok := c.(FailureKinder); ok {
		return k.FailureKind(w)
	}
	return detailShape(detail)
}

var numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m|h)?`)

// detailShape is the first line of detail with every number (and duration) replaced by #.
func detailShape(detail string) string {
	return numbers.ReplaceAllString(firstLine(detail), "#")
}

// runKind is how the run itself failed.
func runKind(runErr error, errs []string) string {
	switch {
	case runErr == nil:
		return "timeline error: " + detailShape(strings.Join(errs, "; "))
	case strings.Contains(runErr.Error(), "livelock"):
		return "livelock"
	case strings.Contains(runErr.Error(), "panicked"):
		return "task panicked"
	}
	return "run failed"
}

// String is the event as a timeline line.
func (ev *Event) String() string {
	v := ""
	if ev.Params.node != nil {
		v = strings.TrimSpace(ev.Params.node.String())
	}
	return fmt.Sprintf("{at: %v, %s: %s}", ev.At, ev.Kind, v)
}

// Report is the shrunk failure for a terminal.
func (s *Shrunk) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "failing seed %d: %s\n", s.Seed, strings.Join(s.Failing, ", "))
	if s.Why != "" {
		fmt.Fprintf(&b, "could not be shrunk (%d runs): %s\n", s.Runs, s.Why)
	}
	fmt.Fprintf(&b, "shrunk in %d runs to %d of %d timeline events, duration %v:\n", s.Runs, len(s.Timeline), s.Original, s.Duration)
	if len(s.Timeline) == 0 {
		b.WriteString("  timeline: []   # fails without any fault\n")
	} else {
		b.WriteString("  timeline:\n")
	}
	for _, ev := range s.Timeline {
		fmt.Fprintf(&b, "    - %s\n", ev)
	}
	for _, c := range s.Result.Checks {
		if !c.Pass && c.Name == s.target {
			fmt.Fprintf(&b, "  %s: %s\n", c.Name, c.Detail)
		}
	}
	fmt.Fprintf(&b, "  reproduce: qfsim run FILE --seed %d (with the timeline above)\n", s.Seed)
	return b.String()
}

// Failure kinds of the built-in checks (FailureKinder).

func (c *capOracle) FailureKind(w *World) string {
	_, peaks := c.get(WorkloadOf(w))
	var over []string
	for _, cl := range w.Scenario.Workload.Clusters {
		if peaks[cl.Name] > w.Scenario.Workload.Cap(cl.Name) {
			over = append(over, cl.Name)
		}
	}
	return fmt.Sprintf("%s over cap on %s", c.what, strings.Join(over, ","))
}

func (c *countCheck) FailureKind(w *World) string {
	if c.looks == 0 {
		return "no look inside the window"
	}
	return fmt.Sprintf("%s not %s %s", c.what, c.win.Mode, c.bounds)
}

func (c *StateCheck) FailureKind(w *World) string {
	var bad []string
	for _, name := range c.names {
		if c.looks[name] == 0 {
			bad = append(bad, name+" never looked at")
		} else if !WindowPass(c.win.Mode, c.hits[name], c.looks[name], c.last[name] == c.want) {
			bad = append(bad, name)
		}
	}
	return fmt.Sprintf("%s %s %q broken for %s", c.what, c.win.Mode, c.want, strings.Join(bad, ", "))
}

func (c *engineMax) FailureKind(w *World) string {
	if c.bounds.AtLeast != nil && c.peak < *c.bounds.AtLeast {
		return "peak below the bound"
	}
	return "peak above the bound"
}

func (c *historyConserved) FailureKind(w *World) string {
	_, problems := c.evaluate(w)
	var kinds []string
	for _, p := range problems {
		p, _, _ = strings.Cut(p, "; first ") // the ids differ from run to run
		kinds = append(kinds, detailShape(p))
	}
	return strings.Join(kinds, "; ")
}

package scenarios

// Shrinking a failing run: with the seed fixed, drop timeline events (halves first, then
// smaller chunks, down to one at a time) and shorten the duration while the same checks still
// fail, so a failure is reported with the few faults that cause it.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Shrunk is a minimal failing variant of a scenario for one seed.
type Shrunk struct {
	Seed     uint64
	Failing  []string // the originally failing checks that still fail
	Timeline []*Event // the remaining events
	Duration time.Duration
	Runs     int     // runs it took
	Result   *Result // the shrunk run's result
	Original int     // events before shrinking
}

// Shrink reduces sc's timeline for seed while a check that failed in res keeps failing.
// maxRuns bounds the work (0: 200 runs).
func Shrink(sc *Scenario, seed uint64, res *Result, maxRuns int) *Shrunk {
	if maxRuns <= 0 {
		maxRuns = 200
	}
	failing := failedChecks(res)
	out := &Shrunk{Seed: seed, Failing: failing, Timeline: sc.Timeline, Duration: sc.Duration, Result: res, Original: len(sc.Timeline)}
	stillFails := func(tl []*Event, d time.Duration) bool {
		if out.Runs >= maxRuns {
			return false
		}
		out.Runs++
		v := *sc
		v.Timeline, v.Duration = tl, d
		r := Run(&v, seed, RunOpts{})
		for _, name := range failedChecks(r) {
			if slices.Contains(failing, name) {
				out.Result = r
				return true
			}
		}
		return false
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
		if d < last || d < time.Second || !stillFails(events, d) {
			break
		}
		out.Duration = d
	}
	return out
}

func failedChecks(r *Result) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c.Name)
		}
	}
	return out
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
		if !c.Pass && slices.Contains(s.Failing, c.Name) {
			fmt.Fprintf(&b, "  %s: %s\n", c.Name, c.Detail)
		}
	}
	fmt.Fprintf(&b, "  reproduce: qfsim run FILE --seed %d (with the timeline above)\n", s.Seed)
	return b.String()
}

package chaos

import (
	"fmt"
	"github.com/queryflux/queryflux/scenarios"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Print writes the report as qfsim run does (one row, failing checks named), then the real run's
// verdicts and the side-by-side metrics.
func (r *Report) Print(w io.Writer) {
	if !r.Supported() {
		fmt.Fprintf(w, "scenario %s (%s): UNSUPPORTED in chaos, not run:\n", r.Scenario, r.Path)
		for _, u := range r.Unsupported {
			fmt.Fprintln(w, "   ", u)
		}
		return
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "scenario %s (%s): run without what real processes cannot do (--skip-unsupported):\n", r.Scenario, r.Path)
		for _, u := range r.Skipped {
			fmt.Fprintln(w, "    skipped", u)
		}
	}
	fmt.Fprintf(w, "scenario %s (%s), chaos at time scale %g, sim seeds %d..%d\n", r.Scenario, r.Path, r.TimeScale, r.Seed, r.Seed+uint64(max(r.SimSeeds, 1))-1)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "  note:", n)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tWALL s\tCHECKS\tRESULT")
	if s := r.Sim; s != nil {
		pass := 0
		for _, c := range s.Checks {
			if c.Pass {
				pass++
			}
		}
		fmt.Fprintf(tw, "sim seed %d (trace %s)\t%.3f\t%d/%d\t%s\n", s.Seed, s.TraceHash, s.WallSeconds, pass, len(s.Checks), verdict(s.Pass()))
		for _, c := range s.Checks {
			if !c.Pass {
				fmt.Fprintf(tw, "  FAIL %s: %s\t\t\t\n", c.Name, c.Detail)
			}
		}
	}
	n := r.counts()
	fmt.Fprintf(tw, "real\t%.3f\t%d/%d (%d unsupported, %d inconclusive)\t%s\n", r.WallSeconds, n["PASS"], len(r.Checks)-n["UNSUPPORTED"],
		n["UNSUPPORTED"], n["INCONCLUSIVE"], r.Outcome())
	tw.Flush()
	for _, c := range r.Checks {
		if c.Verdict != "PASS" {
			fmt.Fprintf(w, "  %s %s: %s\n", c.Verdict, c.Name, c.Detail)
		}
	}
	if r.HostLag != nil {
		fmt.Fprintf(w, "  host lag: %s\n", r.HostLag)
	}
	for _, e := range r.ClientErrors {
		fmt.Fprintf(w, "  client error: %s\n", e)
	}
	for _, wl := range []struct {
		run string
		s   *scenarios.WorkloadSummary
	}{{"sim seed " + fmt.Sprint(r.Seed), r.simWorkload()}, {"real", r.Workload}} {
		if wl.s != nil {
			fmt.Fprintf(w, "  %s: %s; admitted/submitted by worker: %s\n", wl.run, wl.s, perWorker(wl.s))
		}
	}
	if len(r.Metrics) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "METRIC (scenario time)\tSIM (mean of %d seeds)\tREAL\tDIFF %%\tAGREE\tRULE\t\n", r.SimSeeds)
		for _, m := range r.Metrics {
			diff, agree := fmtPct(m.DiffPct), map[bool]string{true: "yes", false: "NO"}[m.Agree]
			if m.Inconclusive != "" {
				agree = "INCONCLUSIVE"
			}
			if m.Missing != "" {
				diff, agree = "-", m.Missing
			}
			fmt.Fprintf(tw, "%s [%s]\t%s\t%s\t%s\t%s\t%s\t\n", m.Name, m.Unit, fmtNum(m.Sim), fmtNum(m.Real), diff, agree, m.Rule)
		}
		tw.Flush()
		a, t := r.Agreeing()
		fmt.Fprintf(w, "%d of %d metrics agree\n", a, t)
		for _, m := range r.Metrics {
			if m.Inconclusive != "" {
				fmt.Fprintf(w, "  INCONCLUSIVE %s: %s\n", m.Name, m.Inconclusive)
			}
		}
	}
	if r.LogDir != "" {
		fmt.Fprintf(w, "daemon logs: %s\n", r.LogDir)
	}
}

// counts is how many of the real run's checks got each verdict.
func (r *Report) counts() map[string]int {
	n := map[string]int{}
	for _, c := range r.Checks {
		n[c.Verdict]++
	}
	return n
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtPct(v float64) string {
	if math.IsInf(v, 0) {
		return "inf"
	}
	return fmt.Sprintf("%+.1f", v)
}

func (r *Report) simWorkload() *scenarios.WorkloadSummary {
	if r.Sim == nil {
		return nil
	}
	return r.Sim.Workload
}

func perWorker(s *scenarios.WorkloadSummary) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.PerWorker)) {
		aw := s.PerWorker[name]
		parts = append(parts, fmt.Sprintf("%s %d/%d", name, aw[0], aw[1]))
	}
	return strings.Join(parts, " ")
}

// PrintCompare writes every report's headline metrics, simulated and real, as one Markdown
// table (a file that did not run gets one row saying why).
func PrintCompare(w io.Writer, reps []*Report) {
	fmt.Fprintln(w, "| scenario | checks sim / real | metric | sim | real | diff | agrees (±20 %) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range reps {
		if !r.Supported() {
			fmt.Fprintf(w, "| %s | not run | %s | | | | |\n", r.Scenario, strings.Join(r.Unsupported, "; "))
			continue
		}
		checks := "-"
		if r.Sim != nil {
			pass := 0
			for _, c := range r.Sim.Checks {
				if c.Pass {
					pass++
				}
			}
			n := r.counts()
			checks = fmt.Sprintf("%d/%d / %d/%d", pass, len(r.Sim.Checks), n["PASS"], len(r.Checks))
			if n["INCONCLUSIVE"] > 0 {
				checks += fmt.Sprintf(" (%d inconclusive: host lag)", n["INCONCLUSIVE"])
			}
		}
		name := r.Scenario
		if len(r.Skipped) > 0 {
			name += fmt.Sprintf(" (%d skipped)", len(r.Skipped))
		}
		for i, m := range r.Metrics {
			if i > 0 {
				name, checks = "", ""
			}
			diff, agree := fmtPct(m.DiffPct)+" %", map[bool]string{true: "yes", false: "**no**"}[m.Agree]
			if m.Inconclusive != "" {
				agree = "inconclusive (host lag)"
			}
			if m.Missing != "" {
				diff, agree = "-", m.Missing
			}
			fmt.Fprintf(w, "| %s | %s | %s [%s] | %s | %s | %s | %s |\n", name, checks, m.Name, m.Unit, fmtNum(m.Sim), fmtNum(m.Real), diff, agree)
		}
	}
}

package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/fleetcheck"
	"github.com/queryflux/queryflux/internal/config"
)

// Exit statuses of qfsim check, for CI.
const (
	exitCheckFailed = 1 // an oracle failed, or the config cannot hold the cap in words
	exitBadInput    = 2 // the config or the overlay is not usable
)

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

type checkFlags struct {
	overlay        string
	workers        int
	checks         int
	seed           uint64
	shrinkTime     time.Duration
	maxDrift       float64
	json           bool
	junit          string
	counterexample string
}

func checkCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check CONFIG",
		Short: "Property-test a queryflux config's capacity caps under drawn faults (exit 1: a cap does not hold)",
		Long: `Build a simulated fleet from a real queryflux configuration (its clusters, caps, groups and
coordination settings: lease TTL, drift margin, queue, onUnavailable, onLeaseLost), draw fault
timelines (crashes, control-plane restarts, partitions, lossy links, clock drift and steps,
starvation, queries that outlive their worker) and check the safety oracles on every run:
leases within cap, the engine within cap, history conserved, config never half-applied (config
edits are drawn too: caps, group members, routing, revisions no worker can compile; every node
must run one whole revision at every instant and the latest once the faults heal). A failing
run is shrunk and written as a scenario file that qfsim run replays. Exit status: 0 every oracle held, 1 one failed (or the
lease timing cannot hold the drift asked for), 2 bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runCheck(cmd.OutOrStdout(), args[0], f)
			var ee *exitError
			if errors.As(err, &ee) && ee.code == exitBadInput {
				fmt.Fprintln(cmd.ErrOrStderr(), "qfsim check:", ee.err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.overlay, "overlay", "", "YAML file: workers, duration, rate, queryMean, longQueryMax, maxDriftRate, maxClockStep, maxStarvation")
	fl.IntVar(&f.workers, "workers", 0, "simulated workers (overrides the overlay; default 4)")
	fl.IntVar(&f.checks, "checks", 100, "fault timelines to draw")
	fl.Uint64Var(&f.seed, "seed", 1, "rapid's seed (0: a random one); the same seed draws the same timelines")
	fl.DurationVar(&f.shrinkTime, "shrink-time", 30*time.Second, "the longest wall time spent shrinking a failing timeline")
	fl.Float64Var(&f.maxDrift, "max-drift", 0, "clock rates drawn within ±this (overrides the overlay; default 0.01)")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	fl.StringVar(&f.junit, "junit", "", "also write the verdicts as JUnit XML to this file")
	fl.StringVar(&f.counterexample, "counterexample", "qfsim-check-counterexample.yaml", "where a failing run's shrunk scenario is written")
	return cmd
}

func runCheck(out io.Writer, path string, f checkFlags) error {
	cfg, err := config.Load(path)
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	var ov fleetcheck.Overlay
	if f.overlay != "" {
		b, err := os.ReadFile(f.overlay)
		if err != nil {
			return &exitError{exitBadInput, err}
		}
		if err := yaml.UnmarshalWithOptions(b, &ov, yaml.DisallowUnknownField()); err != nil {
			return &exitError{exitBadInput, fmt.Errorf("%s: %s", f.overlay, yaml.FormatError(err, false, false))}
		}
	}
	if f.workers > 0 {
		ov.Workers = f.workers
	}
	if f.maxDrift > 0 {
		ov.MaxDriftRate = f.maxDrift
	}
	start := time.Now()
	rep, err := fleetcheck.Check(cfg, fleetcheck.Options{Overlay: ov, Checks: f.checks, Seed: f.seed, ShrinkTime: f.shrinkTime})
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	elapsed := time.Since(start)
	if rep.Counterexample != "" && f.counterexample != "" {
		if err := os.WriteFile(f.counterexample, []byte(rep.Counterexample), 0o644); err != nil {
			return &exitError{exitBadInput, err}
		}
	}
	if f.junit != "" {
		if err := os.WriteFile(f.junit, junitXML(path, rep, elapsed), 0o644); err != nil {
			return &exitError{exitBadInput, err}
		}
	}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printReport(out, path, rep, f)
	}
	if !rep.Passed() {
		return &exitError{exitCheckFailed, errChecksFailed}
	}
	return nil
}

func printReport(out io.Writer, path string, rep *fleetcheck.Report, f checkFlags) {
	fmt.Fprintf(out, "qfsim check %s: %d fault timelines, seed %d\n", path, rep.Runs, rep.Seed)
	for _, n := range rep.Notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
	for _, o := range rep.Oracles {
		fmt.Fprintf(out, "  %-18s %s", o.Name, o.Verdict)
		if o.Detail != "" {
			fmt.Fprintf(out, ": %s", o.Detail)
		}
		fmt.Fprintln(out)
	}
	for _, fd := range rep.Findings {
		fmt.Fprintf(out, "  FAIL: %s\n", fd)
	}
	if rep.Counterexample != "" {
		fmt.Fprintf(out, "  shrunk counterexample: %s (replay: qfsim run %s --seed N, N in its first line)\n", f.counterexample, f.counterexample)
	}
	if rep.Passed() {
		fmt.Fprintln(out, "PASS")
	} else {
		fmt.Fprintln(out, "FAIL")
	}
}

// junitXML is the report as one test suite with a test case per oracle and finding.
func junitXML(path string, rep *fleetcheck.Report, elapsed time.Duration) []byte {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Time     string     `xml:"time,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := suite{Name: "qfsim check " + path, Time: fmt.Sprintf("%.3f", elapsed.Seconds())}
	for _, o := range rep.Oracles {
		tc := testcase{Name: o.Name, Classname: "qfsim.check"}
		switch o.Verdict {
		case "fail":
			tc.Failure = &failure{Message: o.Detail, Text: rep.Counterexample}
			s.Failures++
		case "skipped":
			tc.Skipped = &skipped{Message: o.Detail}
			s.Skipped++
		}
		s.Cases = append(s.Cases, tc)
	}
	for i, fd := range rep.Findings {
		s.Cases = append(s.Cases, testcase{Name: fmt.Sprintf("leaseTiming-%d", i+1), Classname: "qfsim.check", Failure: &failure{Message: fd}})
		s.Failures++
	}
	s.Tests = len(s.Cases)
	b, _ := xml.MarshalIndent(s, "", "  ")
	return append([]byte(xml.Header), append(b, '\n')...)
}

// Command qfsim is the testbed CLI: `qfsim run FILE --seed N [--seeds K] [--json] [-v]` runs a
// scenario in the deterministic simulator for seeds N..N+K-1 and prints one verdict per seed.
// It exits non-zero when any check fails.
//
// qfsim gives the garbage collector a floor of headroom, sim.GCFloor (gcfloor.Start): GOGC
// (Go's default 100, or the GOGC environment variable; off turns the floor off too) counts only
// once the live heap is larger than the floor, as a 10,000-worker fleet's is, so its peak
// memory stays what GOGC=100 gives. (A plain GOGC=400 held 230 KB per worker at the peak of a
// 10,000-worker run against 165 KB: RESULTS.md, "## Simulator".)
//
// qfsim also advises its heap for transparent huge pages before anything else runs,
// sim.HugeHeap (hugeheap.Reserve): memory touched for the first time then costs one page fault
// per 2 MB instead of per 4 KB, on the simulator's thread.
//
// determinism: outside the simulator (a CLI: flags, stdout, wall-clock reports)
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queryflux/queryflux/internal/gcfloor"
	"github.com/queryflux/queryflux/internal/hugeheap"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/scenarios"
	"github.com/queryflux/queryflux/sim"
	"github.com/spf13/cobra"
)

func main() {
	runtime.MemProfileRate = 0     // no allocation sampled but for --memprofile (run)
	hugeheap.Reserve(sim.HugeHeap) // first: it needs a heap the collector has not yet freed
	invariants.Enable()            // a simulator run checks what must always hold, as tests do
	gcfloor.Start(sim.GCFloor)     // for the whole process: every command runs simulations
	if err := rootCmd().Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

// memProfileRate is the runtime's default sampling rate, which --memprofile turns on: the
// process samples no allocation otherwise (each sample unwinds the allocating stack and keeps
// it in a table the process touches for the first time, on the simulator's thread).
const memProfileRate = 512 << 10

// errChecksFailed makes the exit status non-zero without printing more.
var errChecksFailed = fmt.Errorf("checks failed")

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "qfsim",
		Short:         "QueryFlux testbed: run scenarios in the deterministic simulator",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(runCmd(), kindsCmd(), chaosCmd(), planCmd(), checkCmd())
	return root
}

type runFlags struct {
	seed       uint64
	seeds      int
	parallel   int
	json       bool
	verbose    bool
	cpuProfile string
	memProfile string
	noShrink   bool
	noise      bool
	workers    int
	cap        int
	duration   time.Duration
}

func runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a scenario file for one or more seeds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := run(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
			if err != nil && err != errChecksFailed {
				fmt.Fprintln(cmd.ErrOrStderr(), "qfsim:", err)
			}
			return err
		},
	}
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "first seed")
	cmd.Flags().IntVar(&f.seeds, "seeds", 1, "how many seeds to run (seed, seed+1, ...)")
	cmd.Flags().IntVar(&f.parallel, "parallel", 1, "seeds run at once (each run is single-threaded; results print in seed order)")
	cmd.Flags().BoolVar(&f.json, "json", false, "one JSON object per seed per line")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "stream the simulation's log lines to stderr")
	cmd.Flags().StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file")
	cmd.Flags().StringVar(&f.memProfile, "memprofile", "", "write a heap profile of the runs, taken when their live heap was largest, to this file")
	cmd.Flags().BoolVar(&f.noShrink, "no-shrink", false, "do not shrink the first failing seed's timeline")
	cmd.Flags().BoolVar(&f.noise, "noise", false, "yield the Go scheduler at random at every task switch: the trace hashes must not change (make determinism compares)")
	cmd.Flags().IntVar(&f.workers, "workers", 0, "resize the fleet to this many workers (a scenario with a workload: section; its per-worker rates scale the load)")
	cmd.Flags().IntVar(&f.cap, "cap", 0, "set every workload cluster's cap to this (a scenario with a workload: section)")
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "run this much virtual time instead of the file's duration")
	return cmd
}

func run(out, errOut io.Writer, path string, f runFlags) error {
	if f.seeds < 1 {
		return fmt.Errorf("--seeds %d: must be >= 1", f.seeds)
	}
	if f.parallel < 1 {
		f.parallel = 1
	}
	if f.parallel > 1 && f.verbose {
		return fmt.Errorf("-v streams one run's log: use it with --parallel 1")
	}
	sc, err := resized(path, f.workers, f.cap, f.duration)
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if f.memProfile != "" {
		runtime.MemProfileRate = memProfileRate
		p := startPeakHeapProfile()
		defer func() {
			if err := p.finish(f.memProfile, errOut, sc.Workers()); err != nil {
				fmt.Fprintln(errOut, "qfsim: memprofile:", err)
			}
		}()
	}
	failed := 0
	var firstFailed *scenarios.Result
	var table *tabwriter.Writer
	if !f.json {
		fmt.Fprintf(out, "scenario %s (%s, %v of virtual time)\n", sc.Name, path, sc.Duration)
		table = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(table, "SEED\tTRACE HASH\tVIRTUAL s\tWALL s\tEVENTS\tCHECKS\tRESULT")
	}
	for i, res := range runSeeds(sc, f, errOut) {
		seed := f.seed + uint64(i)
		if !res.Pass() {
			failed++
			if firstFailed == nil {
				firstFailed = res
			}
		}
		if f.json {
			b, err := json.Marshal(res)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(b))
		} else {
			writeRow(table, res)
		}
		if !res.Pass() && !f.verbose {
			fmt.Fprintf(errOut, "--- seed %d failed; last log lines:\n%s\n", seed, strings.Join(tail(res.Logs, 40), "\n"))
		}
	}
	if table != nil {
		table.Flush()
		fmt.Fprintf(out, "%d of %d seeds passed\n", f.seeds-failed, f.seeds)
	}
	if firstFailed != nil && !f.noShrink {
		reportShrunk(errOut, sc, firstFailed)
	}
	if failed > 0 {
		return errChecksFailed
	}
	return nil
}

// resized loads a scenario file with its fleet resized to workers, every workload cluster's
// cap set to capacity and its virtual duration set to duration (each when > 0).
func resized(path string, workers, capacity int, duration time.Duration) (*scenarios.Scenario, error) {
	sc, err := scenarios.Load(path)
	if err != nil {
		return nil, err
	}
	switch {
	case workers < 0:
		return nil, fmt.Errorf("--workers %d: must be >= 1", workers)
	case capacity < 0:
		return nil, fmt.Errorf("--cap %d: must be >= 1", capacity)
	case duration < 0:
		return nil, fmt.Errorf("--duration %v: must be positive", duration)
	}
	if workers > 0 || capacity > 0 {
		var caps map[string]int
		if capacity > 0 {
			caps = map[string]int{"": capacity}
		}
		if sc, err = sc.Variant(workers, caps, nil); err != nil {
			return nil, fmt.Errorf("--workers/--cap: %w", err)
		}
	}
	if duration > 0 {
		if sc, err = sc.WithDuration(duration); err != nil {
			return nil, fmt.Errorf("--duration: %w", err)
		}
	}
	return sc, nil
}

// runSeeds yields the results of seeds f.seed.. in order, running up to f.parallel at once.
func runSeeds(sc *scenarios.Scenario, f runFlags, errOut io.Writer) iter.Seq2[int, *scenarios.Result] {
	return func(yield func(int, *scenarios.Result) bool) {
		results := make([]chan *scenarios.Result, f.seeds)
		for i := range results {
			results[i] = make(chan *scenarios.Result, 1)
		}
		slots := make(chan struct{}, f.parallel)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for i := range f.seeds {
				select {
				case slots <- struct{}{}:
				case <-stop:
					return
				}
				go func() {
					defer func() { <-slots }()
					results[i] <- scenarios.Run(sc, f.seed+uint64(i), scenarios.RunOpts{Verbose: f.verbose, LogOut: errOut, Noise: f.noise})
				}()
			}
		}()
		for i := range f.seeds {
			if !yield(i, <-results[i]) {
				return
			}
		}
	}
}

func writeRow(w io.Writer, res *scenarios.Result) {
	pass := 0
	for _, c := range res.Checks {
		if c.Pass {
			pass++
		}
	}
	verdict := "PASS"
	if !res.Pass() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%d\t%s\t%.1f\t%.3f\t%d\t%d/%d\t%s\n", res.Seed, res.TraceHash, res.VirtualSeconds, res.WallSeconds, res.Events, pass, len(res.Checks), verdict)
	for _, c := range res.Checks {
		if !c.Pass {
			fmt.Fprintf(w, "\t  FAIL %s: %s\t\t\t\t\t\n", c.Name, c.Detail)
		}
	}
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func kindsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "kinds",
		Short: "List the registered roles, timeline event kinds and check kinds",
		Run: func(cmd *cobra.Command, args []string) {
			o := cmd.OutOrStdout()
			fmt.Fprintln(o, "roles: ", strings.Join(scenarios.RoleKinds(), ", "))
			fmt.Fprintln(o, "events:", strings.Join(scenarios.EventKinds(), ", "))
			fmt.Fprintln(o, "checks:", strings.Join(scenarios.CheckKinds(), ", "))
		},
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"

	"github.com/queryflux/queryflux/chaos"
	"github.com/queryflux/queryflux/scenarios"
	"github.com/spf13/cobra"
)

type chaosFlags struct {
	timeScale float64
	seed      uint64
	json      bool
	bin       string
	logDir    string
	maxProcs  int
	skip      bool
	compare   bool
}

// chaosCmd: `qfsim chaos FILE... --time-scale S [--seed N] [--json] [--compare] [--skip-unsupported]`
// runs scenario files against real processes and compares them with the simulation. A file
// with parts real processes cannot do is reported UNSUPPORTED and fails the command, unless
// --skip-unsupported runs it without those parts (listed as skipped); a failing check fails it,
// and so does a check the host's own lag left INCONCLUSIVE. The last line counts the outcomes.
func chaosCmd() *cobra.Command {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos FILE...",
		Short: "Run scenario files against real queryflux processes (toxiproxy, signals, PostgreSQL) next to the simulator",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runChaos(cmd.Context(), cmd.OutOrStdout(), args, f)
			if err != nil && err != errChecksFailed {
				fmt.Fprintln(cmd.ErrOrStderr(), "qfsim:", err)
			}
			return err
		},
	}
	cmd.Flags().Float64Var(&f.timeScale, "time-scale", 0.2, "multiply every duration of the file (0.1: 60s of scenario in 6s)")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "the simulator's seed for the side-by-side run")
	cmd.Flags().BoolVar(&f.json, "json", false, "one JSON report per file per line")
	cmd.Flags().StringVar(&f.bin, "bin", "", "the queryflux binary (default: go build ./cmd/queryflux once)")
	cmd.Flags().StringVar(&f.logDir, "log-dir", "", "keep the daemons' logs here (default: a temporary directory, kept on failure)")
	cmd.Flags().IntVar(&f.maxProcs, "max-procs", 50, "largest fleet run as real processes (bigger files are UNSUPPORTED)")
	cmd.Flags().BoolVar(&f.skip, "skip-unsupported", false, "run files without the events and checks real processes cannot do (listed as skipped); files that cannot run at all do not fail the command")
	cmd.Flags().BoolVar(&f.compare, "compare", false, "after the reports, print every file's headline metrics, simulated and real, as one Markdown table")
	return cmd
}

func runChaos(ctx context.Context, out io.Writer, paths []string, f chaosFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := false
	var reports []*chaos.Report
	outcomes := map[string]int{}
	defer func() {
		if f.compare {
			chaos.PrintCompare(out, reports)
		}
		if !f.json {
			fmt.Fprintf(out, "chaos: %d files: %d PASS, %d FAIL, %d INCONCLUSIVE (the host too late to tell: not a pass), %d UNSUPPORTED, %d broke or did not load\n",
				len(paths), outcomes["PASS"], outcomes["FAIL"], outcomes["INCONCLUSIVE"], outcomes["UNSUPPORTED"], outcomes["broke"])
		}
	}()
	for _, path := range paths {
		sc, err := scenarios.Load(path)
		if err != nil {
			fmt.Fprintf(out, "%v\n\n", err) // the other files still run
			failed = true
			outcomes["broke"]++
			continue
		}
		opts := chaos.Options{TimeScale: f.timeScale, Seed: f.seed, Bin: f.bin, MaxProcesses: f.maxProcs, SkipUnsupported: f.skip}
		if f.logDir != "" {
			opts.LogDir = f.logDir + "/" + sc.Name
		}
		rep, err := chaos.Run(ctx, sc, opts)
		if err != nil {
			fmt.Fprintf(out, "scenario %s (%s): the real run broke: %v\n\n", sc.Name, path, err)
			failed = true
			outcomes["broke"]++
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		reports = append(reports, rep)
		if rep.Supported() {
			outcomes[rep.Outcome()]++
		} else {
			outcomes["UNSUPPORTED"]++
		}
		// An INCONCLUSIVE file fails the command too: nothing was shown to hold.
		failed = failed || !rep.Pass() || (!rep.Supported() && !f.skip)
		if f.json {
			for i := range rep.Metrics {
				if math.IsInf(rep.Metrics[i].DiffPct, 0) {
					rep.Metrics[i].DiffPct = math.MaxFloat64 // JSON has no infinity
				}
			}
			b, err := json.Marshal(rep)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(b))
		} else {
			rep.Print(out)
			fmt.Fprintln(out)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

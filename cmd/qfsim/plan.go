package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/plan"
	"github.com/queryflux/queryflux/scenarios"
)

type planFlags struct {
	sweeps      []string
	seed        uint64
	seeds       int
	parallel    int
	out         string
	calibration string
	json        bool
}

// planCmd is `qfsim plan FILE --sweep workers=10..500[:step] [--sweep cap=...]`.
func planCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan FILE --sweep workers=FROM..TO[:STEP] [--sweep cap=V1,V2,...]",
		Short: "Sweep a workload scenario's fleet size and caps: queue times, denials, fairness, throughput, knee",
		Long: `plan runs the scenario's workload for every point of one or two sweeps (workers, cap, or
cap.CLUSTER) and prints queue-time p50/p99, lease denials, Jain's fairness index of the
per-worker admitted share, admitted throughput and control-plane request rate per point, and the
knee against workload.objective: the smallest cap, or the largest fleet, meeting it. It writes
plan.svg, plan.html and plan.txt into --out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runPlan(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "qfsim:", err)
			}
			return err
		},
	}
	cmd.Flags().StringArrayVar(&f.sweeps, "sweep", nil, "NAME=FROM..TO[:STEP] or NAME=V1,V2 (NAME: workers, cap, cap.CLUSTER); once or twice")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "first seed of every point")
	cmd.Flags().IntVar(&f.seeds, "seeds", 1, "seeds per point (results are averaged)")
	cmd.Flags().IntVar(&f.parallel, "parallel", 1, "runs at once")
	cmd.Flags().StringVar(&f.out, "out", "plan-out", "directory for plan.svg, plan.html, plan.txt")
	cmd.Flags().StringVar(&f.calibration, "calibration", "", "control-plane service times (YAML: pool, default, serviceTimes)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the plan as JSON instead of a table")
	return cmd
}

func runPlan(out, errOut io.Writer, path string, f planFlags) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	sc, err := scenarios.Load(path)
	if err != nil {
		return err
	}
	var axes []plan.Axis
	for _, s := range f.sweeps {
		a, err := plan.ParseSweep(s)
		if err != nil {
			return err
		}
		axes = append(axes, a)
	}
	o := plan.Options{Seed: f.seed, Seeds: f.seeds, Parallel: f.parallel,
		Progress: func(p plan.Point) {
			fmt.Fprintf(errOut, "point %v: queue p99 %.0f ms, admitted/s %.1f (%.1f s wall)\n", p.Params, p.QueueP99Ms, p.AdmittedPerSec, p.WallSeconds)
		}}
	if f.calibration != "" {
		if o.Calibration, err = scenarios.LoadCalibration(f.calibration); err != nil {
			return err
		}
	}
	pl, err := plan.Run(sc, axes, o)
	if err != nil {
		return err
	}
	if f.json {
		b, err := json.MarshalIndent(pl, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(out, string(b))
	} else {
		pl.WriteTable(out)
	}
	if err := pl.Write(f.out); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "wrote %s/plan.svg, plan.html, plan.txt\n", f.out)
	return nil
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/fleetcheck"
	"github.com/queryflux/queryflux/internal/config"
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
	history     string
	config      string
	scale       float64
	objective   time.Duration
	progress    bool
}

// planCmd is `qfsim plan FILE --sweep workers=10..500[:step] [--sweep cap=...]`.
func planCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan [SCENARIO] [--from-history FILE [--config CONFIG]] --sweep workers=FROM..TO[:STEP] [--sweep cap=V1,V2,...]",
		Short: "Sweep a workload scenario's fleet size and caps: queue times, denials, fairness, throughput, knee",
		Long: `plan runs the scenario's workload for every point of one or two sweeps (workers, cap, or
cap.CLUSTER) and prints queue-time p50/p99, lease denials, Jain's fairness index of the
per-worker admitted share, admitted throughput and control-plane request rate per point, and the
knee against workload.objective: the smallest cap, or the largest fleet, meeting it. Each point
runs --seeds seeds (default 3) and shows their spread. It writes plan.svg, plan.html and
plan.txt into --out.

--from-history FILE replays a history export (queryflux history export) instead of the
scenario's arrivals; with --config CONFIG instead of a scenario, the fleet is the queryflux
config's (clusters, caps, groups, coordination). The report then compares the replayed
traffic with the recording: rates per group and execution-time quantiles.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			err := runPlan(cmd.OutOrStdout(), cmd.ErrOrStderr(), path, f)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "qfsim:", err)
			}
			return err
		},
	}
	cmd.Flags().StringArrayVar(&f.sweeps, "sweep", nil, "NAME=FROM..TO[:STEP] or NAME=V1,V2 (NAME: workers, cap, cap.CLUSTER); once or twice")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "first seed of every point")
	cmd.Flags().IntVar(&f.seeds, "seeds", 3, "seeds per point (the mean is drawn with the seeds' spread)")
	cmd.Flags().IntVar(&f.parallel, "parallel", 1, "runs at once")
	cmd.Flags().StringVar(&f.out, "out", "plan-out", "directory for plan.svg, plan.html, plan.txt")
	cmd.Flags().StringVar(&f.calibration, "calibration", "", "control-plane service times (YAML: pool, default, serviceTimes); default: the scenario's workload.controlPlane, else the built-in one (plan/calibration.yaml); none: requests take no time")
	cmd.Flags().StringVar(&f.history, "from-history", "", "replay this history export instead of the scenario's arrivals")
	cmd.Flags().StringVar(&f.config, "config", "", "with --from-history and no SCENARIO: the queryflux config whose fleet replays it")
	cmd.Flags().Float64Var(&f.scale, "scale", 1, "with --from-history: replay the recording this many times as fast")
	cmd.Flags().DurationVar(&f.objective, "objective-p99", 0, "queue p99 objective for the knee (overrides workload.objective.queueP99)")
	cmd.Flags().BoolVar(&f.progress, "progress", false, "draw a progress bar on stderr even when it is not a terminal")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the plan as JSON instead of a table")
	return cmd
}

// planScenario is the scenario to sweep: the file, or the config's fleet, replaying the
// history export when asked.
func planScenario(path string, f planFlags) (*scenarios.Scenario, error) {
	var sc *scenarios.Scenario
	var err error
	switch {
	case path != "" && f.config != "":
		return nil, fmt.Errorf("give a SCENARIO or --config, not both")
	case path == "" && (f.config == "" || f.history == ""):
		return nil, fmt.Errorf("give a SCENARIO file, or --from-history FILE with --config CONFIG")
	case path != "":
		if sc, err = scenarios.Load(path); err == nil && f.history != "" {
			err = sc.UseReplay(f.history, f.scale)
		}
	default:
		var cfg *config.Config
		if cfg, err = config.Load(f.config); err == nil {
			sc, err = fleetcheck.Replay(cfg, f.history, fleetcheck.ReplayOptions{Scale: f.scale})
		}
	}
	if err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, fmt.Errorf("%s has no workload: section to plan", sc.Path)
	}
	if f.objective > 0 {
		sc.Workload.Objective.QueueP99 = f.objective
	}
	return sc, nil
}

// isTerminal reports whether w is a terminal (a progress bar would only clutter a file).
func isTerminal(w io.Writer) bool {
	fh, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := fh.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runPlan(out, errOut io.Writer, path string, f planFlags) error {
	sc, err := planScenario(path, f)
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
	o := plan.Options{Seed: f.seed, Seeds: f.seeds, Parallel: f.parallel}
	if f.progress || isTerminal(errOut) {
		o.Progress = plan.NewProgressBar(errOut, time.Now).Update
	}
	switch {
	case f.calibration == "none":
	case f.calibration != "":
		if o.Calibration, err = scenarios.LoadCalibration(f.calibration); err != nil {
			return err
		}
	case sc.Workload.ControlPlane == nil:
		o.Calibration = plan.BuiltinCalibration()
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

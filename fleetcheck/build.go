// Package fleetcheck property-tests a real queryflux configuration in the simulator: it builds a
// simulated fleet from the config's clusters, caps, groups and coordination settings (the
// fleet's size and workload from an overlay), draws fault timelines with rapid (crashes,
// control-plane restarts, partitions, lossy links, clock drift and steps, starvation, queries
// that outlive their worker), and reports each safety oracle's verdict with a shrunk
// counterexample as a scenario file `qfsim run` replays.
//
// It touches nothing but the simulator (scenarios.Run) and the config it is given.
package fleetcheck

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
)

// Overlay is what a config does not say: the simulated fleet's size, its traffic and the faults
// it must survive. Zero fields take the defaults.
type Overlay struct {
	Workers       int           `yaml:"workers"`       // default 4
	Duration      time.Duration `yaml:"duration"`      // virtual time per run; default 60s
	Rate          float64       `yaml:"rate"`          // queries per second per worker per group; default: enough to fill every cap
	QueryMean     time.Duration `yaml:"queryMean"`     // mean query duration; default 1s
	LongQueryMax  time.Duration `yaml:"longQueryMax"`  // the longest query (tens of seconds: they outlive crashes); default 30s
	MaxDriftRate  float64       `yaml:"maxDriftRate"`  // clock rates drawn in [1-d, 1+d]; default 0.01 (NTP-disciplined clocks stay far inside it)
	MaxClockStep  time.Duration `yaml:"maxClockStep"`  // wall-clock steps drawn up to this; default 1h
	MaxStarvation time.Duration `yaml:"maxStarvation"` // a worker's timers late by up to this; default 2s

	settle  time.Duration // after Duration: faults healed, no arrivals, until every node must run the latest revision
	replay  string        // a history export the workload replays instead of drawing arrivals
	scale   float64       // the replay's time compression
	latency time.Duration // fixed one-way network latency (0: fault checks' jittered default)
}

func (o Overlay) withDefaults() Overlay {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.QueryMean <= 0 {
		o.QueryMean = time.Second
	}
	if o.LongQueryMax <= 0 {
		o.LongQueryMax = 30 * time.Second
	}
	if o.MaxDriftRate <= 0 {
		o.MaxDriftRate = 0.01
	}
	if o.MaxClockStep <= 0 {
		o.MaxClockStep = time.Hour
	}
	if o.MaxStarvation <= 0 {
		o.MaxStarvation = 2 * time.Second
	}
	return o
}

// Validate names what is wrong with an overlay.
func (o Overlay) Validate() error {
	switch {
	case o.Workers < 0 || o.Workers > 200:
		return fmt.Errorf("overlay workers %d: must be 1..200", o.Workers)
	case o.MaxDriftRate < 0 || o.MaxDriftRate >= 0.5:
		return fmt.Errorf("overlay maxDriftRate %v: must be in [0, 0.5)", o.MaxDriftRate)
	case o.Rate < 0:
		return fmt.Errorf("overlay rate %v: must not be negative", o.Rate)
	}
	return nil
}

// fleet is what the simulator runs, taken from the config: the parts a scenario's workload names.
type fleet struct {
	coordination config.Coordination
	pollTimeout  time.Duration // the workers' config long-poll
	retryMax     time.Duration // their longest wait between failed polls
	clusters     []cluster
	groups       []group
	historyOn    bool
	notes        []string
}

type cluster struct {
	name string
	cap  int
}

type group struct {
	name        string
	members     []string
	strategy    string
	maxQueued   int
	waitTimeout time.Duration
}

// fromConfig takes the simulated fleet from cfg (defaults applied): enabled clusters with a
// cap, and the groups made of them. A variant "base::v" is its own cluster with its own cap.
func fromConfig(cfg *config.Config) (fleet, error) {
	config.ApplyDefaults(cfg)
	cp := cfg.QueryFlux.ControlPlane
	f := fleet{coordination: cfg.QueryFlux.Coordination, historyOn: true,
		pollTimeout: time.Duration(cp.PollTimeoutSecs) * time.Second, retryMax: time.Duration(cp.RetryMaxSecs) * time.Second}
	if f.coordination.Mode == config.CoordinationLocal {
		// A standalone node's own setting: its workers would take leases from it (a worker's
		// mode defaults to controlPlane), which is the fleet checked here.
		f.notes = append(f.notes, "queryflux.coordination.mode is local (one node's own caps): checked as the fleet of workers this config would serve, with mode controlPlane")
		f.coordination.Mode = config.CoordinationControlPlane
	}
	caps := map[string]int{}
	for _, c := range cfg.ExpandClusters() {
		if !c.IsEnabled() || c.MaxRunningQueries <= 0 {
			continue
		}
		name := simName(c.Name)
		caps[c.Name] = c.MaxRunningQueries
		f.clusters = append(f.clusters, cluster{name: name, cap: c.MaxRunningQueries})
	}
	for _, g := range cfg.ClusterGroups {
		var members []string
		for _, m := range g.Members {
			if _, ok := caps[m]; ok {
				members = append(members, simName(m))
			}
		}
		if len(members) == 0 {
			continue
		}
		strategy := g.Strategy
		if strategy == "" {
			strategy = config.StrategyRoundRobin
		}
		f.groups = append(f.groups, group{name: simName(g.Name), members: members, strategy: strategy,
			maxQueued: g.MaxQueuedQueries, waitTimeout: time.Duration(g.CapacityWaitTimeoutSecs) * time.Second})
	}
	if len(f.groups) == 0 {
		return f, fmt.Errorf("no cluster group has an enabled cluster with maxRunningQueries: nothing to check")
	}
	return f, nil
}

// simName makes a config name usable in a scenario file (variants' "::" included).
func simName(s string) string {
	return strings.NewReplacer("::", "--", " ", "_").Replace(s)
}

// workloadYAML is the scenario's workload section for the fleet under the overlay.
func (f fleet) workloadYAML(o Overlay) string {
	c := f.coordination
	var b strings.Builder
	fmt.Fprintf(&b, "workload:\n  coordination: {mode: controlPlane, onUnavailable: %s, queue: %s, onLeaseLost: %s, leaseTTL: %ds, driftMargin: %ds}\n",
		c.OnUnavailable, c.Queue, c.OnLeaseLost, c.LeaseTTLSecs, c.DriftMarginSecs)
	b.WriteString("  clusters:\n")
	for _, cl := range f.clusters {
		fmt.Fprintf(&b, "    - {name: %q, cap: %d, duration: {dist: lognormal, median: %v, sigma: 1.5, max: %v}}\n",
			cl.name, cl.cap, o.QueryMean, o.LongQueryMax)
	}
	b.WriteString("  groups:\n")
	for _, g := range f.groups {
		wait := g.waitTimeout
		if wait <= 0 {
			wait = 30 * time.Second
		}
		fmt.Fprintf(&b, "    - {name: %q, members: [%s], strategy: %s, maxQueued: %d, waitTimeout: %v}\n",
			g.name, quoteAll(g.members), g.strategy, max(g.maxQueued, 1), wait)
	}
	if o.replay != "" {
		fmt.Fprintf(&b, "  replay: %q\n  scale: %g\n", o.replay, o.scale)
	} else {
		b.WriteString("  arrivals:\n")
		for _, g := range f.groups {
			to := ""
			if o.settle > 0 {
				to = fmt.Sprintf(", to: %v", o.Duration)
			}
			fmt.Fprintf(&b, "    - {group: %q, rate: %.3f, skew: 1%s}\n", g.name, f.rate(g, o), to)
		}
	}
	if f.historyOn {
		b.WriteString("  history: {flushInterval: 1s, buffer: 2000}\n")
	}
	return b.String()
}

// rate fills the group's caps: its total cap over the mean duration, spread over the workers
// and a little more, so queries queue and leases are contended.
func (f fleet) rate(g group, o Overlay) float64 {
	if o.Rate > 0 {
		return o.Rate
	}
	total := 0
	for _, m := range g.members {
		for _, c := range f.clusters {
			if c.name == m {
				total += c.cap
			}
		}
	}
	r := 1.2 * float64(total) / o.QueryMean.Seconds() / float64(o.Workers)
	return math.Min(math.Max(r, 0.1), 50)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// oracles are the checks a run carries, with why one is left out.
func (f fleet) oracles() (checks []string, skipped map[string]string) {
	skipped = map[string]string{}
	checks = []string{"leasesWithinCap"}
	switch {
	case f.coordination.OnLeaseLost == config.OnLeaseLostOverrun:
		skipped["engineWithinCap"] = "onLeaseLost: overrun lets a query run on after its lease is lost, so the engine may exceed the cap by design"
	case f.coordination.OnUnavailable == config.OnUnavailableLocalLimits:
		skipped["engineWithinCap"] = "onUnavailable: localLimits admits queries without leases while the control plane is unreachable, so the engine may exceed the cap by design"
	default:
		checks = append(checks, "engineWithinCap")
	}
	if f.historyOn {
		checks = append(checks, "historyConserved")
	}
	checks = append(checks, "configNeverHalfApplied")
	sort.Strings(checks)
	return checks, skipped
}

// convergenceBound is how long after the faults heal every worker runs the latest revision at
// the latest: a long-poll lost in a partition is given up after the poll timeout plus the
// worker's margin (10 s), then the worker waits out its backoff (at most retryMax, +20 %
// jitter), all on a clock that may run slow by the drift; plus 10 s for a restarted control
// plane to register workers and a starved worker's timers to catch up.
func (f fleet) convergenceBound(o Overlay) time.Duration {
	worst := f.pollTimeout + 10*time.Second + f.retryMax*6/5
	return time.Duration(float64(worst)*(1+o.MaxDriftRate)).Round(time.Second) + 10*time.Second
}

// driftFinding says in words why the lease timing cannot hold under the drift it is asked to
// survive: a worker fences its lease TTL-margin after its last renewal on its own clock, the
// control plane reclaims it TTL after on its own; with clock rates in [1-d, 1+d] the worker's
// interval can be (1+d)/(1-d) times the control plane's.
func (f fleet) driftFinding(o Overlay) string {
	ttl, margin := float64(f.coordination.LeaseTTLSecs), float64(f.coordination.DriftMarginSecs)
	if ttl <= margin {
		return fmt.Sprintf("driftMarginSecs %d is not below leaseTtlSecs %d: a worker would fence every lease at once", int(margin), int(ttl))
	}
	need := (1 + o.MaxDriftRate) / (1 - o.MaxDriftRate)
	have := ttl / (ttl - margin)
	if have >= need {
		return ""
	}
	minMargin := math.Ceil(ttl * (1 - 1/need))
	return fmt.Sprintf("driftMarginSecs %d is too small for clock rates within ±%.1f%%: a worker may hold a lease up to %.3fx as long as the control plane grants it, but leaseTtlSecs %d / (leaseTtlSecs - driftMarginSecs) allows only %.3fx; with leaseTtlSecs %d the margin must be at least %d",
		int(margin), 100*o.MaxDriftRate, need, int(ttl), have, int(ttl), int(minMargin))
}

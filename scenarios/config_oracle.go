package scenarios

// configNeverHalfApplied, the config oracle: at every look (every checkEvery) every running
// worker runs one whole revision a control plane published (its query runtime's group
// fingerprints and routes are those of the revision its config sync names active), never one
// no worker may compile; every control plane's query node runs one whole published revision
// and grants leases under that revision's caps; and, from convergedFrom on (after the faults
// healed), every node runs the latest good revision.

import (
	"fmt"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/assembly"
)

type configOracle struct {
	convergedFrom time.Duration // 0: convergence is not checked

	looks      int
	violations int
	first      []string
	last       map[string]string // per node, the violation seen at its last look
}

func parseConfigNeverHalfApplied(sc *Scenario, p Params) (Check, error) {
	var c struct {
		ConvergedFrom time.Duration `yaml:"convergedFrom"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("this check needs a workload: section (its config is the one edited)")
	}
	if c.ConvergedFrom < 0 || c.ConvergedFrom > sc.Duration {
		return nil, p.Errorf("convergedFrom %v: must be inside the scenario's [0, %v]", c.ConvergedFrom, sc.Duration)
	}
	return &configOracle{convergedFrom: c.ConvergedFrom, last: map[string]string{}}, nil
}

func (c *configOracle) Start(w *World) {
	w.Every(w.Scenario.CheckEvery, w.Scenario.Duration, w.Scenario.CheckEvery, func() { c.look(w) })
}

func (c *configOracle) look(w *World) {
	c.looks++
	fc := fleetConfigOf(w)
	converging := c.convergedFrom > 0 && w.Sim.Elapsed() >= c.convergedFrom
	latest := ""
	if converging && fc.bad == nil {
		latest = fc.latestGood(w)
	}
	for _, spec := range w.Scenario.Nodes() {
		var problem string
		switch role := Assembled(w, spec.Name).(type) {
		case *assembly.Worker:
			problem = c.worker(w, fc, spec.Name, role, latest)
		case *assembly.ControlPlane:
			problem = c.controlPlane(w, fc, spec.Name, role, latest)
		default:
			continue
		}
		if problem != "" {
			c.violation(w, spec.Name, problem)
		}
		c.last[spec.Name] = problem
	}
}

// violation counts a look that found problem; the trace and the first few keep it once per
// change.
func (c *configOracle) violation(w *World, node, problem string) {
	c.violations++
	if c.last[node] == problem {
		return
	}
	w.Sim.Record("violation", problem)
	if len(c.first) < 3 {
		c.first = append(c.first, fmt.Sprintf("at %v: %s", w.Sim.Elapsed(), problem))
	}
}

// worker says what is wrong with the revision worker name runs ("" if nothing).
func (c *configOracle) worker(w *World, fc *fleetConfig, name string, wk *assembly.Worker, latest string) string {
	_, snap := wk.Sync.Active()
	have := partsOf(w.Scenario.Workload, wk.Query.Node.Core().Runtime())
	if snap == nil {
		switch {
		case have != (configParts{}):
			return fmt.Sprintf("%s runs a configuration but no revision is active", name)
		case latest != "":
			return fmt.Sprintf("%s runs no revision after the faults healed, not the latest %.8s", name, latest)
		}
		return ""
	}
	rev := fc.revs[snap.Revision]
	switch {
	case rev == nil:
		return fmt.Sprintf("%s runs revision %.8s, which no control plane published", name, snap.Revision)
	case rev.bad:
		return fmt.Sprintf("%s took revision %.8s, which no worker can compile: it must be refused whole", name, rev.id)
	}
	if want := fc.partsOfRevision(w, rev); have != want {
		return fmt.Sprintf("%s is half-applied: its active revision is %.8s, but %s", name, rev.id, fc.describe(w, have))
	}
	if latest != "" && snap.Revision != latest {
		return fmt.Sprintf("%s still runs revision %.8s after the faults healed, not the latest %.8s", name, snap.Revision, latest)
	}
	return ""
}

// controlPlane says what is wrong with the revision control plane name runs and the caps it
// grants leases under.
func (c *configOracle) controlPlane(w *World, fc *fleetConfig, name string, cp *assembly.ControlPlane, latest string) string {
	have := partsOf(w.Scenario.Workload, cp.Query.Node.Core().Runtime())
	grants := map[string]int{}
	for _, cl := range w.Scenario.Workload.Clusters {
		if limit, ok := cp.LeaseCap(cl.Name); ok {
			grants[cl.Name] = limit
		}
	}
	if have == (configParts{}) {
		if len(grants) > 0 {
			return fmt.Sprintf("control plane %s grants leases under caps %s, but its query node runs no revision (%s)",
				name, capsString(grants), fc.capsFrom(grants))
		}
		if latest != "" {
			return fmt.Sprintf("control plane %s runs no revision after the faults healed, not the latest %.8s", name, latest)
		}
		return ""
	}
	var rev *publishedRevision
	for _, id := range fc.order {
		if r := fc.revs[id]; fc.partsOfRevision(w, r) == have && !r.bad {
			rev = r
		}
	}
	if rev == nil {
		return fmt.Sprintf("control plane %s's query node is half-applied: %s", name, fc.describe(w, have))
	}
	if capsString(grants) != capsString(rev.caps) {
		return fmt.Sprintf("control plane %s runs revision %.8s (caps %s) but grants leases under caps %s (%s)",
			name, rev.id, capsString(rev.caps), capsString(grants), fc.capsFrom(grants))
	}
	if latest != "" && rev.id != latest {
		return fmt.Sprintf("control plane %s still runs revision %.8s after the faults healed, not the latest %.8s", name, rev.id, latest)
	}
	return ""
}

// describe names the revisions whose groups, and whose routes, a runtime's parts are.
func (fc *fleetConfig) describe(w *World, have configParts) string {
	var groups, routes []string
	for _, id := range fc.order {
		p := fc.partsOfRevision(w, fc.revs[id])
		if p.groups == have.groups {
			groups = append(groups, fc.name(id))
		}
		if p.routes == have.routes {
			routes = append(routes, fc.name(id))
		}
	}
	return fmt.Sprintf("its groups and caps are those of %s and its routing that of %s", orNone(groups), orNone(routes))
}

// capsFrom names the revisions whose caps are caps.
func (fc *fleetConfig) capsFrom(caps map[string]int) string {
	var from []string
	for _, id := range fc.order {
		if capsString(fc.revs[id].caps) == capsString(caps) {
			from = append(from, fc.name(id))
		}
	}
	return "the caps of " + orNone(from)
}

func (fc *fleetConfig) name(id string) string {
	if fc.revs[id].bad {
		return fmt.Sprintf("revision %.8s (bad)", id)
	}
	return fmt.Sprintf("revision %.8s", id)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no published revision"
	}
	return strings.Join(names, " or ")
}

func capsString(caps map[string]int) string {
	var parts []string
	for _, name := range sortedKeys(caps) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, caps[name]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func (c *configOracle) Result(w *World) (bool, string) {
	fc := fleetConfigOf(w)
	bad := 0
	for _, id := range fc.order {
		if fc.revs[id].bad {
			bad++
		}
	}
	detail := fmt.Sprintf("%d looks: every node ran one whole published revision (%d published, %d bad and refused)",
		c.looks, len(fc.order), bad)
	if c.convergedFrom > 0 {
		detail += fmt.Sprintf(", the latest good one from %v on", c.convergedFrom)
	}
	if c.violations > 0 {
		return false, fmt.Sprintf("%d looks found a node off one whole revision; first: %s", c.violations, strings.Join(c.first, " | "))
	}
	return true, detail
}

// plantedRoutingSkip is a planted bug for tests (RunOpts.PlantHalfApply): a worker that applies
// a revision's clusters and groups, then fails to apply its routing and carries on with the
// routing it had.
func plantedRoutingSkip() func(*config.Config) {
	var prev *config.Config
	return func(cfg *config.Config) {
		if prev != nil {
			cfg.Routers, cfg.RoutingFallback = prev.Routers, prev.RoutingFallback
		}
		prev = cfg
	}
}

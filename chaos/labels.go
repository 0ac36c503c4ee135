package chaos

// Worker labels on real daemons (`config: {zones: true}`): the configuration the control plane
// serves has the groups g (every worker), eu and us (workerSelector zone=eu / zone=us, on their
// own clusters), and the control plane filters each worker's snapshot for the labels it
// registered with. A worker's labels are its `serve --label` flags: relabel changes the flags it
// is started with next, as an operator edits a unit file, so they apply from its next boot on.
// The checks read the control plane: /admin/workers says, per worker, the revision it last
// reported running, whether that is the one served for its labels (current) and the groups that
// revision holds; /metrics carries queryflux_selector_unmatched per group.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/scenarios"
)

// zonesDocument is the zones layout with the us cluster's cap at usCap (scenarios' zonedConfig).
func zonesDocument(cluster func(name string, cap int, selector string) string, usCap int) string {
	return "clusters:\n" + cluster("c", 1, "") + cluster("c-eu", 1, "eu") + cluster("c-us", usCap, "us") +
		"clusterGroups:\n  - {name: g, members: [c]}\n  - {name: eu, members: [c-eu]}\n  - {name: us, members: [c-us]}\n" +
		"routingFallback: g\n"
}

// labelArgs are the serve flags of a worker's labels, in key order.
func labelArgs(labels map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, "--label", k+"="+labels[k])
	}
	return out
}

// setLabels replaces the --label flags the process starts with next.
func (p *proc) setLabels(labels map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var args []string
	for i := 0; i < len(p.args); i++ {
		if p.args[i] == "--label" {
			i++
			continue
		}
		args = append(args, p.args[i])
	}
	p.args = append(args, labelArgs(labels)...)
}

func planRelabel(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var a struct {
		Worker string            `yaml:"worker"`
		Labels map[string]string `yaml:"labels"`
	}
	if err := ev.Params.Decode(&a); err != nil {
		return st, err.Error()
	}
	names, err := sc.Resolve(a.Worker)
	if err != nil {
		return st, err.Error()
	}
	for k, v := range a.Labels {
		if err := config.CheckLabel(k, v); err != nil {
			return st, err.Error()
		}
	}
	st.do = func(r *runner) error {
		for _, n := range names {
			r.procs[n].setLabels(a.Labels)
		}
		return nil
	}
	return st, ""
}

// planLabelCheck maps groupsServed, revisionConverged, revisionChange and selectorUnmatched.
func planLabelCheck(sc *scenarios.Scenario, c *scenarios.CheckSpec) (realCheck, string) {
	var p struct {
		Worker           string   `yaml:"worker"`
		Groups           []string `yaml:"groups"`
		Want             string   `yaml:"want"`
		Group            string   `yaml:"group"`
		Unmatched        bool     `yaml:"unmatched"`
		ControlPlane     string   `yaml:"controlPlane"`
		scenarios.Window `yaml:",inline"`
	}
	if err := c.Params.Decode(&p); err != nil {
		return nil, err.Error()
	}
	if p.Mode == "" {
		p.Mode = "sometime"
	}
	if p.To == 0 {
		p.To = sc.Duration
	}
	if c.Kind == "selectorUnmatched" {
		cp := p.ControlPlane
		if cp == "" {
			cp = controlPlanes(sc)[0]
		}
		ch := newStateCheck(c.Kind, []string{cp}, fmt.Sprintf("unmatched=%v", p.Unmatched), p.Window)
		ch.probeFn = func(s *snapshot, cp string) (string, bool) {
			m, up := s.cpMetrics[cp]
			if !up {
				return "", false
			}
			return fmt.Sprintf("unmatched=%v", metricValue(m, fmt.Sprintf("queryflux_selector_unmatched{group=%q}", p.Group)) == 1), true
		}
		return ch, ""
	}
	names, err := sc.Resolve(p.Worker)
	if err != nil {
		return nil, err.Error()
	}
	reported := func(s *snapshot, name string) (info reportedRevision, ok bool) {
		cp := sc.ControlPlaneOf(name)
		wi, known := s.registry[cp][name]
		if !s.cpUp[cp] || !known || !wi.Online || !s.running[name] {
			return info, false
		}
		return reportedRevision{wi.Revision, wi.Current, wi.Groups}, true
	}
	switch c.Kind {
	case "groupsServed":
		ch := newStateCheck(c.Kind, names, strings.Join(slices.Sorted(slices.Values(p.Groups)), ","), p.Window)
		ch.probeFn = func(s *snapshot, name string) (string, bool) {
			rev, ok := reported(s, name)
			if !ok || rev.revision == "" {
				return "none", ok
			}
			if !rev.current {
				return fmt.Sprintf("runs %.8s, not the revision served for its labels", rev.revision), true
			}
			return strings.Join(slices.Sorted(slices.Values(rev.groups)), ","), true
		}
		return ch, ""
	case "revisionConverged":
		ch := newStateCheck(c.Kind, names, "converged", p.Window)
		ch.probeFn = func(s *snapshot, name string) (string, bool) {
			rev, ok := reported(s, name)
			if rev.current && rev.revision != "" {
				return "converged", ok
			}
			return fmt.Sprintf("runs %.8s, not the revision served for its labels", rev.revision), ok
		}
		return ch, ""
	case "revisionChange":
		if p.Want != "kept" && p.Want != "changed" {
			return nil, fmt.Sprintf("want %q: kept or changed", p.Want)
		}
		first := map[string]string{}
		ch := newStateCheck(c.Kind, names, p.Want, p.Window)
		ch.probeFn = func(s *snapshot, name string) (string, bool) {
			rev, ok := reported(s, name)
			if !ok {
				return "", false
			}
			if _, seen := first[name]; !seen {
				first[name] = rev.revision
			}
			if rev.revision == first[name] {
				return "kept", true
			}
			return "changed", true
		}
		return ch, ""
	}
	return nil, fmt.Sprintf("check kind %q is not supported in chaos", c.Kind)
}

// reportedRevision is what the control plane says of a worker's configuration.
type reportedRevision struct {
	revision string   // the revision its last heartbeat reported running
	current  bool     // that is the revision served for the labels it registered with
	groups   []string // the groups of the revision served for its labels
}

// configWholeCheck is configNeverHalfApplied as the daemons show it. A worker's runtime is not
// visible from outside, but what it does with a query is: the engine's answer names the cluster
// that ran it (chaos/workload.go). So the check holds every running worker to
//   - running only revisions the control plane served as current (never one it refused or never
//     published: /admin/workers' revision and current), and, from convergedFrom on, the current
//     one at every look;
//   - and sending each query only to a cluster the revision it reported running sends that user
//     to (the route and the group's members of that revision, as the control planes' files said
//     when the revision was first served). A worker that applied a revision's routes but not its
//     members, or the reverse, puts queries where no revision it ran would.
type configWholeCheck struct {
	convergedFrom time.Duration
	served        map[string]map[string][]string // revision -> user -> clusters it routes to
	ran           map[string][]reported          // worker -> revisions it reported, in order
	seen          map[string]time.Duration       // worker -> the last look that saw its revision
	lagging       []string                       // after convergedFrom, a worker not on the current revision
}

// reported is a revision a worker reported running, first seen at (scenario time). since is
// the look before that saw the worker (its first look: at): the worker may have switched to it
// any time after, and between two looks there may be a gap, when its control plane was down.
type reported struct {
	rev       string
	since, at time.Duration
}

func planConfigWhole(c *scenarios.CheckSpec) (realCheck, string) {
	var a struct {
		ConvergedFrom time.Duration `yaml:"convergedFrom"`
	}
	if err := c.Params.Decode(&a); err != nil {
		return nil, err.Error()
	}
	return &configWholeCheck{convergedFrom: a.ConvergedFrom, served: map[string]map[string][]string{}, ran: map[string][]reported{},
		seen: map[string]time.Duration{}}, ""
}

func (c *configWholeCheck) look(sc *scenarios.Scenario, s *snapshot) {
	for _, name := range workerNames(sc) {
		cp := sc.ControlPlaneOf(name)
		wi, known := s.registry[cp][name]
		if !s.cpUp[cp] || !known || !wi.Online || !s.running[name] || wi.Revision == "" {
			continue
		}
		if _, seen := c.served[wi.Revision]; wi.Current && !seen {
			c.served[wi.Revision] = s.routing
		}
		if r := c.ran[name]; len(r) == 0 || r[len(r)-1].rev != wi.Revision {
			since, looked := c.seen[name]
			if !looked {
				since = s.t
			}
			c.ran[name] = append(r, reported{rev: wi.Revision, since: since, at: s.t})
		}
		c.seen[name] = s.t
		if c.convergedFrom > 0 && s.t >= c.convergedFrom && !wi.Current && len(c.lagging) < 5 {
			c.lagging = append(c.lagging, fmt.Sprintf("at %v %s runs %.8s, not the current revision", s.t.Round(time.Millisecond), name, wi.Revision))
		}
	}
}

func (c *configWholeCheck) result(r *runner) (bool, string) {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(c.ran)) {
		for _, rep := range c.ran[name] {
			if _, ok := c.served[rep.rev]; !ok {
				problems = append(problems, fmt.Sprintf("%s ran %.8s, never the current revision", name, rep.rev))
			}
		}
	}
	problems = append(problems, c.lagging...)
	judged, misrouted := c.landings(r)
	problems = append(problems, misrouted...)
	if len(problems) > 0 {
		return false, strings.Join(problems, "; ")
	}
	return true, fmt.Sprintf("every worker ran only revisions the control plane served as current (%d revisions); from %v on, the current one at every look (read from /admin/workers); "+
		"%d answered queries ran on a cluster the revision their worker reported routes them to",
		len(c.served), c.convergedFrom, judged)
}

// landings judges each answered query against the revisions its worker reported while it ran.
// A report reaches a look up to a heartbeat and a look after the worker switched, so a query
// may have run under any revision reported from that long before it was sent until as long
// after it was answered; a revision first seen after a gap in the looks (its control plane
// down) may have run from the look before the gap on. A query no look can place (its worker not seen) is not judged.
func (c *configWholeCheck) landings(r *runner) (judged int, misrouted []string) {
	if r.wl == nil {
		return 0, nil
	}
	slack := time.Duration(float64(r.intervals().heartbeat+r.pollEvery())/r.opts.TimeScale) + 100*time.Millisecond
	for _, l := range r.wl.landings() {
		revs := c.ran[l.worker]
		allowed, placed := map[string]bool{}, false
		var names []string
		for i, rep := range revs {
			until := time.Duration(1<<63 - 1)
			if i+1 < len(revs) {
				until = revs[i+1].at
			}
			routing, served := c.served[rep.rev]
			if !served || rep.since > l.to+slack || until < l.from-slack {
				continue
			}
			placed = true
			names = append(names, fmt.Sprintf("%.8s: %s", rep.rev, routing[l.user]))
			for _, cl := range routing[l.user] {
				allowed[cl] = true
			}
		}
		if !placed {
			continue
		}
		judged++
		if !allowed[l.cluster] && len(misrouted) < 5 {
			misrouted = append(misrouted, fmt.Sprintf("half-applied: %s's query as %s, sent at %v, ran on cluster %s; the revisions it reported then route %s to %s",
				l.worker, l.user, l.from.Round(time.Millisecond), l.cluster, l.user, strings.Join(names, ", ")))
		}
	}
	return judged, misrouted
}

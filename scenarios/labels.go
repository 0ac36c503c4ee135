package scenarios

// Worker labels in scenarios: with `config: {zones: true}` the served configuration has three
// groups, each over its own cluster: g (every worker, the fallback), eu (workers labelled
// zone=eu) and us (zone=us); configSet then edits the cap of the us cluster only, an edit that
// touches one group. The control plane filters each worker's snapshot for the labels it
// registered with (the real ConfigServer).
// Event: relabel (a worker's labels from its next boot on). Checks: groupsServed (the groups of a
// worker's active snapshot), revisionConverged (a worker runs the revision the control plane
// filters for its labels), revisionChange (whether a worker's revision is still the one it ran
// at the window's start: kept, or changed) and selectorUnmatched (the control plane's queryflux_selector_unmatched for a group).

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/assembly"
)

// zonedConfig is the zones layout with the us cluster's cap at usCap.
func zonedConfig(usCap int) *config.Config {
	cfg := &config.Config{
		Clusters: config.NamedList[config.Cluster]{
			{Name: "c", Engine: config.EngineSim, MaxRunningQueries: 1},
			{Name: "c-eu", Engine: config.EngineSim, MaxRunningQueries: 1, WorkerSelector: map[string]string{"zone": "eu"}},
			{Name: "c-us", Engine: config.EngineSim, MaxRunningQueries: usCap, WorkerSelector: map[string]string{"zone": "us"}},
		},
		ClusterGroups: config.NamedList[config.ClusterGroup]{
			{Name: "g", Members: []string{"c"}},
			{Name: "eu", Members: []string{"c-eu"}},
			{Name: "us", Members: []string{"c-us"}},
		},
		RoutingFallback: "g",
	}
	config.ApplyDefaults(cfg)
	return cfg
}

// labelsNow are the labels worker spec boots with: the fleet's, or the last relabel's.
func labelsNow(w *World, spec NodeSpec) map[string]string {
	return w.Durable("labels/"+spec.Name, func() any { return &nodeLabels{labels: maps.Clone(spec.Labels)} }).(*nodeLabels).labels
}

type nodeLabels struct{ labels map[string]string }

func specOf(w *World, name string) NodeSpec {
	for _, s := range w.Scenario.Nodes() {
		if s.Name == name {
			return s
		}
	}
	return NodeSpec{Name: name}
}

func parseRelabel(sc *Scenario, p Params) (Action, error) {
	var a struct {
		Worker string            `yaml:"worker"`
		Labels map[string]string `yaml:"labels"`
	}
	if err := p.Decode(&a); err != nil {
		return nil, err
	}
	names, err := sc.Resolve(a.Worker)
	if err != nil {
		return nil, p.Errorf("worker: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
		if err := config.CheckLabel(k, a.Labels[k]); err != nil {
			return nil, p.Errorf("labels: %v", err)
		}
	}
	return func(w *World) error {
		for _, name := range names {
			w.Durable("labels/"+name, func() any { return &nodeLabels{} }).(*nodeLabels).labels = maps.Clone(a.Labels)
		}
		return nil
	}, nil
}

// controlPlaneFor is the running control plane of worker name (nil while down).
func controlPlaneFor(w *World, name string) *assembly.ControlPlane {
	c, _ := Assembled(w, w.Scenario.ControlPlaneOf(name)).(*assembly.ControlPlane)
	return c
}

// activeRevision is the revision worker name runs ("" before any; false while down).
func activeRevision(w *World, name string) (string, bool) {
	cs, _ := configSyncOf(w, name)
	if cs == nil {
		return "", false
	}
	_, snap := cs.Active()
	if snap == nil {
		return "", true
	}
	return snap.Revision, true
}

func parseGroupsServed(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Worker string   `yaml:"worker"`
		Groups []string `yaml:"groups"`
		Window `yaml:",inline"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	names, err := labelCheck(sc, p, c.Worker, &c.Window)
	if err != nil {
		return nil, err
	}
	want := strings.Join(slices.Sorted(slices.Values(c.Groups)), ",")
	return NewStateCheck("groups", names, want, c.Window, func(w *World, name string) (string, bool) {
		cs, _ := configSyncOf(w, name)
		if cs == nil {
			return "", false
		}
		cfg, _ := cs.Active()
		if cfg == nil {
			return "none", true
		}
		var got []string
		for _, g := range cfg.ClusterGroups {
			got = append(got, g.Name)
		}
		slices.Sort(got)
		return strings.Join(got, ","), true
	}), nil
}

func parseRevisionConverged(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Worker string `yaml:"worker"`
		Window `yaml:",inline"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	names, err := labelCheck(sc, p, c.Worker, &c.Window)
	if err != nil {
		return nil, err
	}
	return NewStateCheck("revision", names, "converged", c.Window, func(w *World, name string) (string, bool) {
		have, up := activeRevision(w, name)
		cp := controlPlaneFor(w, name)
		if !up || cp == nil {
			return "", false
		}
		want, _ := cp.Config.ServedFor(labelsNow(w, specOf(w, name)))
		if have == want {
			return "converged", true
		}
		return fmt.Sprintf("runs %.8s, served %.8s", have, want), true
	}), nil
}

func parseRevisionChange(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Worker string `yaml:"worker"`
		Want   string `yaml:"want"` // kept | changed
		Window `yaml:",inline"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if c.Want != "kept" && c.Want != "changed" {
		return nil, p.Errorf("want %q: kept or changed", c.Want)
	}
	names, err := labelCheck(sc, p, c.Worker, &c.Window)
	if err != nil {
		return nil, err
	}
	first := map[string]string{}
	return NewStateCheck("revisionChange", names, c.Want, c.Window, func(w *World, name string) (string, bool) {
		have, up := activeRevision(w, name)
		if !up {
			return "", false
		}
		if _, seen := first[name]; !seen {
			first[name] = have
		}
		if have == first[name] {
			return "kept", true
		}
		return "changed", true
	}), nil
}

func parseSelectorUnmatched(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Group        string `yaml:"group"`
		Unmatched    bool   `yaml:"unmatched"`
		ControlPlane string `yaml:"controlPlane"`
		Window       `yaml:",inline"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if err := requireConfig(sc, p); err != nil {
		return nil, err
	}
	if err := c.Window.validate(sc, p); err != nil {
		return nil, err
	}
	if c.ControlPlane == "" && len(sc.Fleet.ControlPlanes) > 0 {
		c.ControlPlane = sc.Fleet.ControlPlanes[0].Name
	}
	names, err := sc.Resolve(c.ControlPlane)
	if err != nil || len(names) != 1 {
		return nil, p.Errorf("controlPlane %q: one control plane (%v)", c.ControlPlane, err)
	}
	want := fmt.Sprintf("unmatched=%v", c.Unmatched)
	return NewStateCheck("selector", names, want, c.Window, func(w *World, name string) (string, bool) {
		cp, _ := Assembled(w, name).(*assembly.ControlPlane)
		if cp == nil {
			return "", false
		}
		unmatched := false
		for _, g := range cp.Config.UnmatchedSelectors(cp.CP) {
			unmatched = unmatched || g.Name == c.Group
		}
		return fmt.Sprintf("unmatched=%v", unmatched), true
	}), nil
}

// labelCheck validates what every worker check of this file shares and resolves its workers.
func labelCheck(sc *Scenario, p Params, worker string, win *Window) ([]string, error) {
	if err := requireConfig(sc, p); err != nil {
		return nil, err
	}
	if !sc.Config.Zones {
		return nil, p.Errorf("needs config: {zones: true}")
	}
	if err := win.validate(sc, p); err != nil {
		return nil, err
	}
	names, err := sc.Resolve(worker)
	if err != nil {
		return nil, p.Errorf("worker: %v", err)
	}
	return names, nil
}

package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
)

// SelectorVerdict is whether the worker a snapshot was filtered for satisfies one workerSelector.
type SelectorVerdict struct {
	Selector map[string]string `json:"selector"`
	Matched  bool              `json:"matched"`
}

// For is s filtered for a worker labelled labels: only the clusters whose workerSelector the
// labels satisfy (so only their credentials), and only the groups whose own selector they
// satisfy and that keep at least one member; the rest of the groups are listed in
// WithheldGroups by name and selector. The revision is the filtered content's. s itself must
// be unfiltered (as the control plane builds it).
func (s *WorkerSnapshotV1) For(labels map[string]string) (*WorkerSnapshotV1, error) {
	if len(s.Eligibility) > 0 || len(s.WithheldGroups) > 0 {
		return nil, fmt.Errorf("snapshot: revision %s is already filtered for a worker", s.Revision)
	}
	out := *s
	out.Clusters = nil
	selectors := map[string]map[string]string{}
	for _, c := range s.Clusters {
		selectors[c.Name] = c.WorkerSelector
		if config.Selects(c.WorkerSelector, labels) {
			out.Clusters = append(out.Clusters, c)
		}
	}
	out.ClusterGroups = nil
	for _, g := range s.ClusterGroups {
		if kept, ok := groupFor(g, selectors, labels); ok {
			out.ClusterGroups = append(out.ClusterGroups, kept)
		} else {
			out.WithheldGroups = append(out.WithheldGroups, withheld(g, selectors))
		}
	}
	out.Eligibility = s.Verdicts(labels)
	var err error
	if out.Revision, err = Revision(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// groupFor is g with only the members labels may use; false when the group is withheld.
func groupFor(g config.ClusterGroup, selectors map[string]map[string]string, labels map[string]string) (config.ClusterGroup, bool) {
	if !config.Selects(g.WorkerSelector, labels) {
		return g, false
	}
	var members []string
	for _, m := range g.Members {
		if config.Selects(selectors[m], labels) {
			members = append(members, m)
		}
	}
	if len(members) == 0 {
		return g, false
	}
	if len(members) < len(g.Members) {
		g.Members = members
		if g.Weights != nil {
			g.Weights = maps.Clone(g.Weights)
			maps.DeleteFunc(g.Weights, func(m string, _ int) bool { return !slices.Contains(members, m) })
		}
	}
	return g, true
}

// withheld names what a worker needs to serve g: the group's selector, joined with its first
// member's when the group's alone would have sufficed.
func withheld(g config.ClusterGroup, selectors map[string]map[string]string) config.WithheldGroup {
	need := maps.Clone(g.WorkerSelector)
	if need == nil {
		need = map[string]string{}
	}
	if len(g.Members) > 0 {
		for k, v := range selectors[g.Members[0]] { //determinism:ok fills a map; no key is set twice
			if _, set := need[k]; !set {
				need[k] = v
			}
		}
	}
	return config.WithheldGroup{Name: g.Name, WorkerSelector: need}
}

// Verdicts is, for every distinct workerSelector of s's groups and clusters (sorted), whether
// labels satisfy it. Two workers with the same verdicts get the same filtered snapshot.
func (s *WorkerSnapshotV1) Verdicts(labels map[string]string) []SelectorVerdict {
	seen := map[string]bool{}
	var out []SelectorVerdict
	add := func(sel map[string]string) {
		if len(sel) == 0 {
			return
		}
		key := config.FormatLabels(sel)
		if !seen[key] {
			seen[key] = true
			out = append(out, SelectorVerdict{Selector: sel, Matched: config.Selects(sel, labels)})
		}
	}
	for _, c := range s.Clusters {
		add(c.WorkerSelector)
	}
	for _, g := range s.ClusterGroups {
		add(g.WorkerSelector)
	}
	slices.SortFunc(out, func(a, b SelectorVerdict) int {
		return strings.Compare(config.FormatLabels(a.Selector), config.FormatLabels(b.Selector))
	})
	return out
}

// VerdictKey is Verdicts as one string, a cache key for filtered snapshots.
func VerdictKey(verdicts []SelectorVerdict) string {
	var b strings.Builder
	for _, v := range verdicts {
		fmt.Fprintf(&b, "%s=%t;", config.FormatLabels(v.Selector), v.Matched)
	}
	return b.String()
}

// CheckFor says why s is not the snapshot the control plane would send a worker labelled
// labels: a group or cluster it holds whose selector the labels do not satisfy, or a selector
// verdict the labels contradict (the snapshot was filtered for a worker with other labels, so
// it may lack groups this worker serves). A worker checks every snapshot it did not get from
// the control plane itself: a peer's copy or the one it saved before a restart.
func (s *WorkerSnapshotV1) CheckFor(labels map[string]string) error {
	for _, c := range s.Clusters {
		if !config.Selects(c.WorkerSelector, labels) {
			return fmt.Errorf("snapshot holds cluster %q for workers labelled %s; this worker's labels are %s",
				c.Name, config.FormatLabels(c.WorkerSelector), config.FormatLabels(labels))
		}
	}
	for _, g := range s.ClusterGroups {
		if !config.Selects(g.WorkerSelector, labels) {
			return fmt.Errorf("snapshot holds group %q for workers labelled %s; this worker's labels are %s",
				g.Name, config.FormatLabels(g.WorkerSelector), config.FormatLabels(labels))
		}
	}
	for _, v := range s.Eligibility {
		if got := config.Selects(v.Selector, labels); got != v.Matched {
			return fmt.Errorf("snapshot was filtered for a worker that %s selector %s; this worker (labels %s) %s",
				satisfies(v.Matched), config.FormatLabels(v.Selector), config.FormatLabels(labels), satisfies(got))
		}
	}
	return nil
}

func satisfies(b bool) string {
	if b {
		return "satisfies"
	}
	return "does not satisfy"
}

// Unserved lists the groups of s that hold a workerSelector (their own or a member cluster's)
// and that no worker labelled as in workers would be sent (For keeps none of them), with what a
// worker needs to serve them. Queries routed to them fail on every worker. s must be unfiltered.
func (s *WorkerSnapshotV1) Unserved(workers []map[string]string) []config.WithheldGroup {
	selectors := map[string]map[string]string{}
	for _, c := range s.Clusters {
		selectors[c.Name] = c.WorkerSelector
	}
	var out []config.WithheldGroup
	for _, g := range s.ClusterGroups {
		if !hasSelector(g, selectors) {
			continue
		}
		served := false
		for _, labels := range workers {
			if _, ok := groupFor(g, selectors, labels); ok {
				served = true
				break
			}
		}
		if !served {
			out = append(out, withheld(g, selectors))
		}
	}
	return out
}

// SelectorGroups names the groups of s that hold a workerSelector, their own or a member's.
func (s *WorkerSnapshotV1) SelectorGroups() []string {
	selectors := map[string]map[string]string{}
	for _, c := range s.Clusters {
		selectors[c.Name] = c.WorkerSelector
	}
	var out []string
	for _, g := range s.ClusterGroups {
		if hasSelector(g, selectors) {
			out = append(out, g.Name)
		}
	}
	return out
}

func hasSelector(g config.ClusterGroup, selectors map[string]map[string]string) bool {
	if len(g.WorkerSelector) > 0 {
		return true
	}
	for _, m := range g.Members {
		if len(selectors[m]) > 0 {
			return true
		}
	}
	return false
}

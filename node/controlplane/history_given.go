package controlplane

// This file is the history intake's gate: a worker's record may name only a cluster, group and
// user the control plane gave it, in the configuration it is sent now or in one of the
// givenRevisionsKept before (a worker files its queries after they end, and may run an older
// revision for a while: cut off from the control plane, or not yet switched).

import (
	"fmt"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/history"
)

// givenRevisionsKept is how many replaced revisions still vouch for a record's names.
const givenRevisionsKept = 16

// givenNames is what one revision gives a worker of one set of selector verdicts.
type givenNames struct {
	clusters, groups map[string]bool
	users            map[string]bool // nil: no users configured, any name may log in
}

// gives is nil when n gives every name rec holds. A record without a cluster (refused before
// one was picked, or answered from the cache) may name any group: the one its client asked for.
func (n *givenNames) gives(rec *history.Record) error {
	switch {
	case rec.Cluster != "" && !n.clusters[rec.Cluster]:
		return fmt.Errorf("cluster %q", rec.Cluster)
	case rec.Cluster != "" && rec.Group != "" && !n.groups[rec.Group]:
		return fmt.Errorf("group %q", rec.Group)
	case rec.User != "" && n.users != nil && !n.users[rec.User]:
		return fmt.Errorf("user %q", rec.User)
	}
	return nil
}

// givenTo is what snap gives a worker labelled labels, built once per revision and verdicts.
func (c *servedConfig) givenTo(labels map[string]string) (*givenNames, error) {
	key := snapshot.VerdictKey(c.snap.Verdicts(labels))
	if n := c.given[key]; n != nil {
		return n, nil
	}
	snap, err := c.snap.For(labels)
	if err != nil {
		return nil, err
	}
	n := &givenNames{clusters: map[string]bool{}, groups: map[string]bool{}}
	for _, cl := range snap.Clusters {
		n.clusters[cl.Name] = true
	}
	for _, g := range snap.ClusterGroups {
		n.groups[g.Name] = true
	}
	if users := snap.Settings.Security.Users; len(users) > 0 {
		n.users = make(map[string]bool, len(users))
		for _, u := range users {
			n.users[u.Name] = true
		}
	}
	if c.given == nil {
		c.given = map[string]*givenNames{}
	}
	c.given[key] = n
	return n, nil
}

// HistoryGate is the history intake's Gate: each record of a worker's batch must name what one
// of the kept revisions (the current first) gives the worker's labels. Before the first Publish
// every record passes.
func (s *ConfigServer) HistoryGate(labelsOf func(worker string) map[string]string) history.Gate {
	return func(worker string) func(*history.Record) error {
		given := s.givenAll(labelsOf(worker))
		return func(rec *history.Record) error {
			if len(given) == 0 {
				return nil
			}
			missing := given[0].gives(rec)
			if missing == nil {
				return nil
			}
			for _, n := range given[1:] {
				if n.gives(rec) == nil {
					return nil
				}
			}
			return fmt.Errorf("%w: the record names %v, which is not in the configuration this worker is sent nor in the %d revisions before it",
				history.ErrNotGiven, missing, givenRevisionsKept)
		}
	}
}

// givenAll is what each kept revision gives labels, the current first. A revision that cannot
// be filtered (never so on a snapshot the control plane built) vouches for nothing.
func (s *ConfigServer) givenAll(labels map[string]string) []*givenNames {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil
	}
	out := make([]*givenNames, 0, 1+len(s.replaced))
	for _, c := range append([]*servedConfig{s.current}, s.replaced...) {
		if n, err := c.givenTo(labels); err == nil {
			out = append(out, n)
		}
	}
	return out
}

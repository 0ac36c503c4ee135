package controlplane

// This file is the history intake's gate: a worker's record may name only a cluster, group and
// user the control plane gave it, in the configuration it is sent now or in one of the
// givenRevisionsKept before (a worker files its queries after they end, and may run an older
// revision for a while: cut off from the control plane, or not yet switched). What the gate
// reads of those revisions is kept in the control plane's database when its registry store can
// (PublishedKeeper), so that a restart does not make late records of removed clusters refused.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/redact"
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

// PublishedKeeper keeps, across control-plane restarts, what the history gate reads of the
// revisions published last (gateSkeleton, encoded). pgregistry.Store is one; a registry store
// that is not keeps them in memory only.
type PublishedKeeper interface {
	// KeepPublished records skeleton as the newest revision published (again, when it was
	// before) and forgets all but the keep newest.
	KeepPublished(ctx context.Context, revision string, skeleton []byte, keep int) error
	// Published is the skeletons kept, newest first, at most limit.
	Published(ctx context.Context, limit int) ([][]byte, error)
}

// publishedIOTimeout bounds one read or write of the kept revisions.
const publishedIOTimeout = 5 * time.Second

// gateSkeleton is what the gate reads of snap (givenTo): each cluster's name and selector,
// each group's name, members and selector, each user's name; the revision is snap's. It holds no
// credentials, password hashes, options or scripts, so it may be kept in the database.
func gateSkeleton(snap *snapshot.WorkerSnapshotV1) *snapshot.WorkerSnapshotV1 {
	out := &snapshot.WorkerSnapshotV1{SchemaVersion: snap.SchemaVersion, Revision: snap.Revision, ConfirmedAt: snap.ConfirmedAt,
		Credentials: snapshot.Stripped}
	for _, c := range snap.Clusters {
		out.Clusters = append(out.Clusters, snapshot.Cluster{Name: c.Name, WorkerSelector: c.WorkerSelector})
	}
	for _, g := range snap.ClusterGroups {
		out.ClusterGroups = append(out.ClusterGroups, config.ClusterGroup{Name: g.Name, Members: g.Members, WorkerSelector: g.WorkerSelector})
	}
	for _, u := range snap.Settings.Security.Users {
		out.Settings.Security.Users = append(out.Settings.Security.Users, config.User{Name: u.Name})
	}
	return out
}

// keepPublished records the current revision with keeper (logged, not fatal, when it cannot:
// the gate then trusts fewer revisions after a restart).
func (s *ConfigServer) keepPublished(keeper PublishedKeeper) {
	s.mu.Lock()
	cur := s.current
	s.mu.Unlock()
	if cur == nil {
		return
	}
	// Not snapshot.Encode: the skeleton keeps its revision's name, not its own content's.
	body, err := json.Marshal(gateSkeleton(cur.snap))
	if err == nil {
		ctx, cancel := s.env.WithTimeout(context.Background(), publishedIOTimeout)
		err = keeper.KeepPublished(ctx, cur.snap.Revision, body, 1+givenRevisionsKept)
		cancel()
	}
	if err != nil {
		s.env.Logger().Warn("history gate: the published revision could not be kept in the database; after a restart, late records of its clusters may be refused",
			"revision", cur.snap.Revision, "err", redact.Error(err))
	}
}

// restorePublished takes the revisions keeper kept, before anything is published here: they
// vouch for late records as if they had been published by this process.
func (s *ConfigServer) restorePublished(keeper PublishedKeeper) {
	ctx, cancel := s.env.WithTimeout(context.Background(), publishedIOTimeout)
	bodies, err := keeper.Published(ctx, 1+givenRevisionsKept)
	cancel()
	if err != nil {
		s.env.Logger().Warn("history gate: the revisions published before this start could not be read; late records of clusters since removed will be refused", "err", redact.Error(err))
		return
	}
	var restored []*servedConfig
	for _, b := range bodies {
		snap := &snapshot.WorkerSnapshotV1{}
		if err := json.Unmarshal(b, snap); err != nil || snap.Revision == "" {
			s.env.Logger().Warn("history gate: a kept revision is unreadable, skipped", "err", redact.Error(err))
			continue
		}
		restored = append(restored, &servedConfig{snap: snap})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		s.replaced = restored
	}
	s.env.Logger().Info("history gate: revisions published before this start restored", "revisions", len(restored))
}

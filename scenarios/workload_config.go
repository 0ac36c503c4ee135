package scenarios

// Configuration edits in a workload scenario: mid-run the control plane publishes a new
// revision of the fleet's config. configSet {cluster, cap} edits one cap; configEdit edits caps,
// group members and routing in one revision, or publishes one no worker can compile (bad: true:
// the edit plus a routingFallback naming no group, as a buggy compiler's would pass it), which
// every node must refuse whole. The desired config lives in the World (it stands for the
// config store: it survives restarts); every snapshot the control planes build is recorded,
// so configNeverHalfApplied (config_oracle.go) knows each revision's parts.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// ConfigEdit is one revision's changes: caps by cluster, members by group, the group each tag
// routes to. Bad publishes them in a revision no worker can compile.
type ConfigEdit struct {
	Caps    map[string]int      `yaml:"caps"`
	Members map[string][]string `yaml:"members"`
	Routes  map[string]string   `yaml:"routes"`
	Bad     bool                `yaml:"bad"`
}

// fleetConfig is the desired config beyond the caps (WorkloadStats.caps) and the revisions
// built from it.
type fleetConfig struct {
	members map[string][]string // group -> clusters, where an edit changed them
	routes  map[string]string   // tag -> group, where an edit changed it
	bad     *ConfigEdit         // the edit the latest, bad, revision carries; nil: it is good
	revs    map[string]*publishedRevision
	order   []string // revisions in the order first built
}

// publishedRevision is one revision a control plane built: for a bad one, its parts are those
// of the edit it carries (what a node that half-applied it would run).
type publishedRevision struct {
	id       string
	bad      bool
	intended *snapshot.WorkerSnapshotV1 // the revision without its breakage
	caps     map[string]int
	parts    *configParts // computed on first use
}

func fleetConfigOf(w *World) *fleetConfig {
	return w.Durable("workload/config", func() any {
		return &fleetConfig{members: map[string][]string{}, routes: map[string]string{}, revs: map[string]*publishedRevision{}}
	}).(*fleetConfig)
}

func parseConfigEdit(sc *Scenario, p Params) (Action, error) {
	var e ConfigEdit
	if err := p.Decode(&e); err != nil {
		return nil, err
	}
	if err := e.validate(sc.Workload); err != nil {
		return nil, p.Errorf("%v", err)
	}
	return func(w *World) error {
		fc := fleetConfigOf(w)
		if e.Bad {
			fc.bad = &e
			w.Sim.Record("config", "bad edit")
			configChanged(w)
			return nil
		}
		fc.bad = nil
		for _, name := range slices.Sorted(maps.Keys(e.Caps)) {
			setCap(w, name, e.Caps[name])
		}
		maps.Copy(fc.members, e.Members)
		maps.Copy(fc.routes, e.Routes)
		w.Sim.Record("config", fmt.Sprintf("edit caps=%v members=%v routes=%v", e.Caps, e.Members, e.Routes))
		configChanged(w)
		return nil
	}, nil
}

func (e *ConfigEdit) validate(wl *Workload) error {
	if wl == nil {
		return fmt.Errorf("configEdit edits the workload's config: needs a workload: section")
	}
	if len(e.Caps)+len(e.Members)+len(e.Routes) == 0 {
		return fmt.Errorf("configEdit: give caps, members or routes")
	}
	groups := map[string]bool{}
	for _, g := range wl.Groups {
		groups[g.Name] = true
	}
	for _, c := range slices.Sorted(maps.Keys(e.Caps)) {
		if wl.Cap(c) == 0 || e.Caps[c] < 1 {
			return fmt.Errorf("caps.%s: %d: want a workload cluster and a cap >= 1", c, e.Caps[c])
		}
	}
	for _, g := range slices.Sorted(maps.Keys(e.Members)) {
		if !groups[g] || len(e.Members[g]) == 0 {
			return fmt.Errorf("members.%s: want a workload group and at least one cluster", g)
		}
		for _, c := range e.Members[g] {
			if wl.Cap(c) == 0 {
				return fmt.Errorf("members.%s: no workload cluster named %q", g, c)
			}
		}
	}
	for _, tag := range slices.Sorted(maps.Keys(e.Routes)) {
		if !groups[tag] || !groups[e.Routes[tag]] {
			return fmt.Errorf("routes.%s: %s: tags and targets are workload groups", tag, e.Routes[tag])
		}
	}
	return nil
}

// config is the desired config with the caps given, plus an edit not applied yet (a bad one).
func (fc *fleetConfig) config(wl *Workload, caps map[string]int, extra *ConfigEdit) *config.Config {
	caps, members, routes := maps.Clone(caps), maps.Clone(fc.members), maps.Clone(fc.routes)
	if extra != nil {
		maps.Copy(caps, extra.Caps)
		maps.Copy(members, extra.Members)
		maps.Copy(routes, extra.Routes)
	}
	cfg := wl.config(caps)
	for i := range cfg.ClusterGroups {
		if m, ok := members[cfg.ClusterGroups[i].Name]; ok {
			cfg.ClusterGroups[i].Members = m
		}
	}
	for tag, group := range routes { //determinism:ok writes a map
		cfg.Routers[0].TagToGroup[tag] = group
	}
	return cfg
}

// workloadSnapshot is the revision the control planes serve now: the desired config, or the
// bad revision carrying the latest edit.
func workloadSnapshot(w *World, at time.Time) (*snapshot.WorkerSnapshotV1, error) {
	fc := fleetConfigOf(w)
	wl := w.Scenario.Workload
	caps := WorkloadOf(w).caps
	snap, err := snapshot.Build(fc.config(wl, caps, fc.bad), snapshot.Options{ConfirmedAt: at})
	if err != nil {
		return nil, err
	}
	if fc.bad == nil {
		fc.record(snap.Revision, snap, false)
		return snap, nil
	}
	broken := *snap
	broken.RoutingFallback = "nowhere"
	if broken.Revision, err = snapshot.Revision(&broken); err != nil {
		return nil, err
	}
	fc.record(broken.Revision, snap, true)
	return &broken, nil
}

// record keeps revision id as served, with the snapshot it was built from (for a bad one:
// before it was broken).
func (fc *fleetConfig) record(id string, intended *snapshot.WorkerSnapshotV1, bad bool) {
	if _, ok := fc.revs[id]; ok {
		return
	}
	caps := map[string]int{}
	for _, c := range intended.Clusters {
		caps[c.Name] = c.MaxRunningQueries
	}
	fc.revs[id] = &publishedRevision{id: id, bad: bad, intended: intended, caps: caps}
	fc.order = append(fc.order, id)
}

// latestGood is the revision of the desired config without a pending bad edit.
func (fc *fleetConfig) latestGood(w *World) string {
	snap, err := snapshot.Build(fc.config(w.Scenario.Workload, WorkloadOf(w).caps, nil), snapshot.Options{})
	if err != nil {
		return ""
	}
	return snap.Revision
}

// configParts are what a node runs, in two parts a half-applied revision would mix: each
// group's fingerprint (its members and their caps), and the group each tag routes to.
type configParts struct {
	groups, routes string
}

// partsOf reads the parts of a runtime (none: "").
func partsOf(wl *Workload, rt *proxy.Runtime) configParts {
	if !hasClusters(rt) {
		return configParts{}
	}
	var p configParts
	for _, g := range wl.Groups {
		p.groups += fmt.Sprintf("%s=%x ", g.Name, rt.GroupFingerprint(g.Name))
		d := rt.Route(routedRequest(g.Name))
		p.routes += fmt.Sprintf("%s->%s ", g.Name, d.Group)
	}
	p.routes += "untagged->" + rt.Route(routedRequest("")).Group
	return p
}

// routedRequest is a query as the workload's arrivals send them, tagged with tag.
func routedRequest(tag string) *query.Request {
	req := &query.Request{SQL: "select 1", User: tag, Protocol: query.ProtocolPostgres}
	if tag != "" {
		req.Tags = []string{tag}
	}
	return req
}

func hasClusters(rt *proxy.Runtime) bool { return rt != nil && len(rt.Clusters()) > 0 }

// partsOfRevision builds the runtime a worker would from the revision's snapshot (through its
// encoding, as a worker receives it) and reads its parts.
func (fc *fleetConfig) partsOfRevision(w *World, r *publishedRevision) configParts {
	if r.parts != nil {
		return *r.parts
	}
	p, err := revisionParts(w, r.intended)
	if err != nil {
		w.Errorf("revision %.8s: %v", r.id, err)
	}
	r.parts = &p
	return p
}

func revisionParts(w *World, snap *snapshot.WorkerSnapshotV1) (configParts, error) {
	body, err := json.Marshal(snap)
	if err != nil {
		return configParts{}, err
	}
	decoded, err := snapshot.Decode(body)
	if err != nil {
		return configParts{}, err
	}
	local := fleetQueryFlux(w, config.RoleWorker)
	local.ControlPlane.URL = "http://control-plane"
	cfg, err := decoded.WorkerConfig(&local)
	if err == nil {
		err = config.Compile(cfg)
	}
	if err != nil {
		return configParts{}, err
	}
	rt, err := proxy.Build(cfg, simEngines(w))
	if err != nil {
		return configParts{}, err
	}
	defer rt.Discard()
	return partsOf(w.Scenario.Workload, rt), nil
}

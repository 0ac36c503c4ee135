package proxy

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/queryflux/queryflux/internal/query"
)

// Selection strategies: how a group picks among its members.
const (
	RoundRobin  = "roundRobin"
	LeastLoaded = "leastLoaded"
	Failover    = "failover"
	Weighted    = "weighted"
)

// ClusterSpec is one cluster as the core needs it.
type ClusterSpec struct {
	Name              string
	Enabled           bool
	MaxRunningQueries int
	Engine            query.Engine
	// ConfigHash identifies the cluster's whole configuration (Build hashes the config entry);
	// it is part of its groups' fingerprints, so editing the cluster invalidates their cache.
	ConfigHash uint64

	shared *sharedEngine // an engine reused from the previous runtime (Build with Reuse)
}

// MemberSpec is one cluster of a group.
type MemberSpec struct {
	Cluster string
	Weight  int // for Weighted; <= 0 counts as 1
}

// GroupSpec is a cluster group.
type GroupSpec struct {
	Name     string
	Members  []MemberSpec
	Strategy string // RoundRobin (default), LeastLoaded, Failover, Weighted
	// MaxQueuedQueries bounds queries waiting for a slot in this group; 0 means none may wait.
	MaxQueuedQueries int
	// CapacityWaitTimeout bounds one query's wait for a slot; 0 means only its ctx bounds it.
	CapacityWaitTimeout time.Duration
	// QueryTimeout bounds a query's run on the engine; 0 means only its ctx bounds it.
	QueryTimeout time.Duration
	// Cache is the group's result cache; a zero TTL disables it.
	Cache CacheSpec
	// ReadOnly refuses statements that write or change schema (see readOnlyAllows).
	ReadOnly bool
	// BlockedStatements refuses statements by leading words or kind ("drop", "ddl", "delete").
	BlockedStatements []string
	// PoolMode is "session" or "transaction" ("" means transaction): how PostgreSQL wire
	// clients share engine connections (OpenWire).
	PoolMode string
	// ResetQuery runs on an engine connection before it serves another client; "" means the
	// engine's default (DISCARD ALL).
	ResetQuery string
	// ConfigHash identifies the group's configuration (Build hashes the config entry).
	ConfigHash uint64
}

// CacheSpec configures a group's result cache. Zero TTL disables it.
type CacheSpec struct {
	TTL           time.Duration
	MaxBytes      int64 // bound on the group's cached bytes; 0 leaves only the core's bound
	MaxEntryBytes int64 // a larger result is not cached; 0 means MaxBytes
	// PreferredWait, when set, sends a query this node has no result for to the worker owning
	// its key (Options.Locality), waiting this long for the owner's answer; 0 runs it here.
	PreferredWait time.Duration
	// Eligible says whether a worker with these labels serves the group (its selectors).
	Eligible func(labels map[string]string) bool
}

// Limits bound every query; 0 means unlimited.
type Limits struct {
	MaxResultRows    int64 // a longer result fails with CodeLimitExceeded
	MaxResultBytes   int64 // a larger result (Arrow buffer bytes) fails with CodeLimitExceeded
	MaxQueuedPerUser int   // a user's queries waiting for capacity, over all groups
}

// check fails a stream that has passed a result bound.
func (l Limits) check(rows, bytes int64) error {
	switch {
	case l.MaxResultRows > 0 && rows > l.MaxResultRows:
		return &query.Error{Code: query.CodeLimitExceeded, Message: fmt.Sprintf("result exceeds maxResultRows (%d)", l.MaxResultRows)}
	case l.MaxResultBytes > 0 && bytes > l.MaxResultBytes:
		return &query.Error{Code: query.CodeLimitExceeded, Message: fmt.Sprintf("result exceeds maxResultBytes (%d)", l.MaxResultBytes)}
	}
	return nil
}

// RuntimeSpec is everything a Runtime is made of.
type RuntimeSpec struct {
	Clusters []ClusterSpec
	Groups   []GroupSpec
	Routers  []Router
	Fallback string // routingFallback group; "" means unrouted queries fail
	// Revision names the config this runtime came from, for logs.
	Revision string
	// Limits are the fleet-wide guardrails (settings.guardrails).
	Limits Limits
	// OwnsEngines makes the runtime close its engines once it is retired and drained. Leave it
	// false when engines are shared between runtimes (the simulator's one engine per cluster).
	OwnsEngines bool
	// NoPassthrough forces every query through the Arrow path (settings.passthrough: false).
	NoPassthrough bool
	// Databases are the names, besides the groups', a PostgreSQL wire client may give as its
	// database: clusters and their engine databases. Nil: any name (see CheckDatabase).
	Databases []string
	// Withheld are groups this node may not serve, by name, with the selector (as written
	// for people) a node's labels would need: routers may name them, queries routed there
	// are refused with CodeNotEligible.
	Withheld map[string]string
}

// Runtime is one activated configuration, compiled: immutable except for health and the
// round-robin cursors. Queries pin the runtime they started on until they finish.
type Runtime struct {
	revision string
	routers  []Router
	rnames   []string // routers' trace names
	fallback string
	owns     bool
	limits   Limits
	noRelay  bool // settings.passthrough: false
	clusters map[string]*cluster
	names    []string // cluster names, sorted
	groups   map[string]*group
	dbs      map[string]bool   // RuntimeSpec.Databases; nil: any name
	withheld map[string]string // group -> the selector it needs (RuntimeSpec.Withheld)
	// nameLens has bit min(len(name), 63) set for every group name, served or withheld: most
	// names knownGroup is asked about (a client's database, on every transaction) have a
	// length no group has, and are told apart without hashing them.
	nameLens uint64
	// byProtocol is the routers' decision for each frontend protocol (by protocolIndex), made
	// once, when the routers decide by the protocol alone (protocolOnly, byProtocolSet): unset
	// otherwise. Its traces are shared by every query routed with them, and never written; each
	// knows its group (Decision.g).
	byProtocol    [len(protocols)]Decision
	byProtocolSet bool
	// keepRoutes: the routers decide by a session's inputs alone (sessionOnly), so that a
	// session may keep its decision under this runtime (routeMemo), and not by the protocol
	// alone (byProtocol decides at once then).
	keepRoutes bool

	// pins is twice the queries pinned to the runtime, plus one once it is retired: one word,
	// so that a pin that finds it not retired counts itself before a retire can see no query
	// (every query pins and unpins it, with no lock). closed: its engines are closed (once).
	pins   atomic.Int64
	closed atomic.Bool

	// checks are the health checks' pings under way on the runtime's engines, by their cancel:
	// retire ends them, so that a slow engine's ping keeps a replaced configuration's engines
	// open no longer than its answer takes, not to the health check's timeout.
	checks checks
}

// checks are the cancels of the health checks' pings a runtime has under way; once retired,
// it takes none (a ping started then is cancelled at once).
type checks struct {
	mu      sync.Mutex
	next    uint64
	cancel  map[uint64]context.CancelFunc
	retired bool
}

// start registers cancel as a ping's, to be called when the runtime is retired: at once if it
// is. It returns the ping's key for end.
func (c *checks) start(cancel context.CancelFunc) uint64 {
	c.mu.Lock()
	if c.retired {
		c.mu.Unlock()
		cancel()
		return 0
	}
	if c.cancel == nil {
		c.cancel = map[uint64]context.CancelFunc{}
	}
	c.next++
	c.cancel[c.next] = cancel
	c.mu.Unlock()
	return c.next
}

// end forgets the ping key started.
func (c *checks) end(key uint64) {
	c.mu.Lock()
	delete(c.cancel, key)
	c.mu.Unlock()
}

// retire cancels the pings under way and every later one.
func (c *checks) retire() {
	c.mu.Lock()
	c.retired = true
	cancels := make([]context.CancelFunc, 0, len(c.cancel))
	for _, cancel := range c.cancel { //determinism:ok each cancels its own ping, in any order
		cancels = append(cancels, cancel)
	}
	c.cancel = nil
	c.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// isRetired reports whether retire was called: a ping that failed since was cancelled by it,
// and says nothing of its engine.
func (c *checks) isRetired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retired
}

// retiredPin is the bit of Runtime.pins that says it is retired; each pin adds onePin.
const (
	retiredPin = 1
	onePin     = 2
)

type cluster struct {
	name    string
	enabled bool
	cap     int
	engine  query.Engine
	shared  *sharedEngine // set when the runtime owns (a reference to) the engine
	hash    uint64
	healthy atomic.Bool
	// count is the running count of the core that last counted on this cluster (Core.countOf):
	// the core's by name, found once rather than looked up by name on every admission.
	count atomic.Pointer[clusterCount]
}

// clusterCount is a core's running count on a cluster.
type clusterCount struct {
	core *Core
	n    *atomic.Int64
}

type member struct {
	cluster *cluster
	weight  int
}

type group struct {
	name        string
	members     []member
	strategy    string
	maxQueued   int
	waitTimeout time.Duration
	timeout     time.Duration
	cache       CacheSpec
	readOnly    bool
	blocked     []string
	poolMode    string
	resetQuery  string
	fingerprint uint64
	cursor      atomic.Uint64
	// wireOpeners: every enabled member's engine opens wire sessions (relayable(isWireOpener),
	// decided once: OpenWire asks on every transaction).
	wireOpeners bool
	// engineUsers are the users its clusters' engines log in as (engineuser.go).
	engineUsers []string
}

// NewRuntime validates spec and compiles it. Errors name the offending entry.
func NewRuntime(spec RuntimeSpec) (*Runtime, error) {
	rt := &Runtime{
		revision: spec.Revision,
		routers:  spec.Routers,
		rnames:   routerNames(spec.Routers),
		fallback: spec.Fallback,
		owns:     spec.OwnsEngines,
		limits:   spec.Limits,
		noRelay:  spec.NoPassthrough,
		clusters: map[string]*cluster{},
		groups:   map[string]*group{},
		withheld: spec.Withheld,
	}
	for name := range spec.Withheld { //determinism:ok OR-ing bits is the same in any order
		rt.nameLens |= nameLenBit(name)
	}
	if spec.Databases != nil {
		rt.dbs = map[string]bool{}
		for _, d := range spec.Databases {
			rt.dbs[d] = true
		}
	}
	for _, c := range spec.Clusters {
		if err := addCluster(rt, c); err != nil {
			return nil, err
		}
	}
	for _, g := range spec.Groups {
		if err := addGroup(rt, g); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(spec.Withheld) {
		if rt.groups[name] != nil {
			return nil, fmt.Errorf("cluster group %q is both served and withheld", name)
		}
	}
	for i, r := range spec.Routers {
		for _, t := range r.Targets() {
			if !rt.knownGroup(t) {
				return nil, fmt.Errorf("router %s#%d names unknown group %q", r.Kind(), i, t)
			}
		}
	}
	if spec.Fallback != "" && !rt.knownGroup(spec.Fallback) {
		return nil, fmt.Errorf("routingFallback names unknown group %q", spec.Fallback)
	}
	rt.keepRoutes = sessionOnly(spec.Routers) && !protocolOnly(spec.Routers)
	if protocolOnly(spec.Routers) {
		for i, p := range protocols {
			d := routeNamed(rt.routers, rt.rnames, rt.fallback, rt.knownGroup, &query.Request{Protocol: p})
			d.g = rt.groups[d.Group]
			rt.byProtocol[i] = d
		}
		rt.byProtocolSet = true
	}
	return rt, nil
}

// protocols are the frontends' protocols, as Runtime.byProtocol lists their decisions.
var protocols = [...]string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL}

// protocolIndex is p's index in protocols, -1 for another.
func protocolIndex(p string) int {
	switch p {
	case query.ProtocolPostgres:
		return 0
	case query.ProtocolMySQL:
		return 1
	case query.ProtocolTrino:
		return 2
	case query.ProtocolFlightSQL:
		return 3
	}
	return -1
}

func addCluster(rt *Runtime, c ClusterSpec) error {
	switch {
	case c.Name == "":
		return fmt.Errorf("cluster with empty name")
	case rt.clusters[c.Name] != nil:
		return fmt.Errorf("cluster %q defined twice", c.Name)
	case c.MaxRunningQueries <= 0:
		return fmt.Errorf("cluster %q: maxRunningQueries must be > 0, got %d", c.Name, c.MaxRunningQueries)
	case c.Engine == nil && c.Enabled:
		return fmt.Errorf("cluster %q: no engine", c.Name)
	}
	cl := &cluster{name: c.Name, enabled: c.Enabled, cap: c.MaxRunningQueries, engine: c.Engine, hash: c.ConfigHash}
	if c.shared != nil {
		cl.engine, cl.shared = c.shared.engine, c.shared
	} else if rt.owns && c.Engine != nil {
		cl.shared = newSharedEngine(c.Engine)
	}
	cl.healthy.Store(true)
	rt.clusters[c.Name] = cl
	rt.names = append(rt.names, c.Name)
	sort.Strings(rt.names)
	return nil
}

func addGroup(rt *Runtime, g GroupSpec) error {
	switch {
	case g.Name == "":
		return fmt.Errorf("cluster group with empty name")
	case rt.groups[g.Name] != nil:
		return fmt.Errorf("cluster group %q defined twice", g.Name)
	case len(g.Members) == 0:
		return fmt.Errorf("cluster group %q has no members", g.Name)
	case g.MaxQueuedQueries < 0:
		return fmt.Errorf("cluster group %q: maxQueuedQueries must be >= 0", g.Name)
	}
	strategy := g.Strategy
	if strategy == "" {
		strategy = RoundRobin
	}
	switch strategy {
	case RoundRobin, LeastLoaded, Failover, Weighted:
	default:
		return fmt.Errorf("cluster group %q: unknown strategy %q (want roundRobin, leastLoaded, failover or weighted)", g.Name, g.Strategy)
	}
	if g.Cache.TTL < 0 || g.Cache.MaxBytes < 0 || g.Cache.MaxEntryBytes < 0 {
		return fmt.Errorf("cluster group %q: cache ttl and sizes must be >= 0", g.Name)
	}
	gr := &group{name: g.Name, strategy: strategy, maxQueued: g.MaxQueuedQueries,
		waitTimeout: g.CapacityWaitTimeout, timeout: g.QueryTimeout, cache: g.Cache,
		readOnly: g.ReadOnly, blocked: g.BlockedStatements, poolMode: g.PoolMode, resetQuery: g.ResetQuery}
	switch gr.poolMode {
	case "", PoolModeTransaction, PoolModeSession:
	default:
		return fmt.Errorf("cluster group %q: unknown pool mode %q (want transaction or session)", g.Name, g.PoolMode)
	}
	if gr.cache.MaxEntryBytes == 0 {
		gr.cache.MaxEntryBytes = gr.cache.MaxBytes
	}
	h := xxhash.New()
	_, _ = h.WriteString(g.Name + "\x00" + strategy + "\x00")
	writeUint(h, g.ConfigHash)
	for _, m := range g.Members {
		c := rt.clusters[m.Cluster]
		if c == nil {
			return fmt.Errorf("cluster group %q: member %q is not a defined cluster", g.Name, m.Cluster)
		}
		w := max(m.Weight, 1)
		gr.members = append(gr.members, member{cluster: c, weight: w})
		_, _ = h.WriteString(c.name + "\x00")
		writeUint(h, c.hash)
		writeUint(h, uint64(c.cap))
		writeUint(h, uint64(w))
		if c.enabled {
			writeUint(h, 1)
		}
	}
	gr.fingerprint = h.Sum64()
	gr.wireOpeners = gr.relayable(isWireOpener)
	gr.engineUsers = engineUsersOf(gr.members)
	rt.groups[g.Name] = gr
	rt.nameLens |= nameLenBit(g.Name)
	return nil
}

func writeUint(h *xxhash.Digest, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	_, _ = h.Write(b[:])
}

// Revision is the config revision this runtime was built from.
func (rt *Runtime) Revision() string { return rt.revision }

// Route decides the group for req and returns the trail. It never blocks.
//
// A PostgreSQL wire client's database names the cluster group its statements go to when a
// group has that name (psql ... reporting): it decides before the routers.
func (rt *Runtime) Route(req *query.Request) Decision {
	if req.Protocol == query.ProtocolPostgres && req.Database != "" && rt.knownGroup(req.Database) {
		return Decision{Group: req.Database, Trace: []TraceStep{{Router: "database", Matched: true, Group: req.Database,
			Reason: "the client's database names the group"}}}
	}
	if i := protocolIndex(req.Protocol); i >= 0 && rt.byProtocolSet {
		return rt.byProtocol[i]
	}
	return routeNamed(rt.routers, rt.rnames, rt.fallback, rt.knownGroup, req)
}

// CheckDatabase refuses, as PostgreSQL does (3D000), a PostgreSQL wire client's database that
// names nothing here: no group, no cluster, no cluster's engine database, and no script router
// that reads the database. Such a name would otherwise be routed like any other and its queries
// run in some cluster's own database, silently.
func (rt *Runtime) CheckDatabase(name string) error {
	if rt.dbs == nil || rt.dbs[name] || rt.knownGroup(name) || rt.scriptReadsDatabase() {
		return nil
	}
	return &query.Error{Code: query.CodeNoRoute, Message: fmt.Sprintf("database %q does not exist", name)}
}

func (rt *Runtime) scriptReadsDatabase() bool {
	for _, r := range rt.routers {
		if sr, ok := r.(*ScriptRouter); ok && sr.readsDatabase {
			return true
		}
	}
	return false
}

// knownGroup reports whether g is a group of the configuration, served here or withheld.
func (rt *Runtime) knownGroup(g string) bool {
	if rt.nameLens&nameLenBit(g) == 0 {
		return false // no group's name is that long
	}
	_, withheld := rt.withheld[g]
	return rt.groups[g] != nil || withheld
}

// nameLenBit is the bit of Runtime.nameLens for a name of s's length.
func nameLenBit(s string) uint64 { return 1 << min(len(s), 63) }

// notEligible is the error of a query routed to a group this node does not serve.
func (rt *Runtime) notEligible(g string) error {
	return &query.Error{Code: query.CodeNotEligible, Message: fmt.Sprintf(
		"cluster group %q is served only by workers labelled %s (its workerSelector); this worker's labels do not satisfy it",
		g, rt.withheld[g])}
}

// SetHealthy marks a cluster up or down; down clusters are skipped by selection. Unknown names
// are ignored (the cluster may have been removed by a newer config).
func (rt *Runtime) SetHealthy(cluster string, ok bool) {
	if c := rt.clusters[cluster]; c != nil {
		c.healthy.Store(ok)
	}
}

// Clusters lists the cluster names, sorted.
func (rt *Runtime) Clusters() []string { return append([]string(nil), rt.names...) }

// Engine returns a cluster's engine, for health checks and passthrough.
func (rt *Runtime) Engine(cluster string) query.Engine {
	if c := rt.clusters[cluster]; c != nil {
		return c.engine
	}
	return nil
}

// GroupFingerprint identifies a group's config and its members' configs; "" group gives 0.
func (rt *Runtime) GroupFingerprint(name string) uint64 {
	if g := rt.groups[name]; g != nil {
		return g.fingerprint
	}
	return 0
}

// pin registers a query on this runtime; false once the runtime is retired.
func (rt *Runtime) pin() bool {
	for {
		v := rt.pins.Load()
		if v&retiredPin != 0 {
			return false
		}
		if rt.pins.CompareAndSwap(v, v+onePin) {
			return true
		}
	}
}

// unpin ends a query's hold; the last one out of a retired runtime closes its engines.
func (rt *Runtime) unpin() {
	v := rt.pins.Add(-onePin)
	if v < 0 {
		panic(fmt.Sprintf("proxy: runtime %q inflight went negative", rt.revision))
	}
	if v == retiredPin {
		rt.closeOnce()
	}
}

// retire stops new queries from pinning rt; its engines close once the last query finishes.
func (rt *Runtime) retire() {
	rt.checks.retire()
	if old := rt.pins.Or(retiredPin); old < onePin {
		rt.closeOnce()
	}
}

// closeOnce closes the engines of a retired runtime no query pins, the first time it is
// called: by retire or by the last unpin, whichever comes last.
func (rt *Runtime) closeOnce() {
	if rt.closed.CompareAndSwap(false, true) {
		rt.closeEngines()
	}
}

// Inflight is the number of queries pinned to rt.
func (rt *Runtime) Inflight() int { return int(rt.pins.Load() / onePin) }

// Closed reports whether rt has been retired and its engines closed.
func (rt *Runtime) Closed() bool { return rt.closed.Load() }

func (rt *Runtime) closeEngines() {
	for _, name := range rt.names {
		if sh := rt.clusters[name].shared; sh != nil {
			sh.release()
		}
	}
}

// Discard releases a runtime that was built but will never be activated (its engines close,
// except those another runtime shares). Never call it on an activated runtime.
func (rt *Runtime) Discard() { rt.retire() }

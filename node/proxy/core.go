package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
)

// GuardPollDefault is how often a queued query asks the guard again when no local release woke
// it: with a fleet-wide guard, slots also free on other nodes, which no local signal reports.
const GuardPollDefault = 500 * time.Millisecond

// guardRetryMin is the first wait of a queued head after the guard denied it; each denial in a
// row doubles it (jittered) up to the poll interval. Slots freed on other nodes are found in a
// few milliseconds instead of a whole poll, and a fleet of waiting heads soon backs off.
const guardRetryMin = 2 * time.Millisecond

// FreedNotifier is a Guard that says when slots may have freed without a local release being
// visible yet (capacity.LeaseGuard: a release batch reached the control plane). The core
// registers its wake-up so queued queries ask again at once.
type FreedNotifier interface {
	OnFreed(fn func())
}

// RetryCapper is a Guard whose denials must be asked again within RetryMax (a lease guard in
// retry mode: the control plane keeps a freed slot for a waiting worker only while it keeps
// asking), so a queued head's back-off stops growing there instead of at the poll interval.
type RetryCapper interface {
	RetryMax() time.Duration
}

// Options configure a Core. Env is required; the rest have defaults.
type Options struct {
	Env env.Env
	// Guard hands out capacity slots; nil means the core counts them itself, as a LocalGuard
	// would (the standalone proxy).
	Guard Guard
	// Registerer receives the core's metrics; nil means they are kept but not registered.
	Registerer prometheus.Registerer
	// OnFinish is called once per query when it ends (history). It runs in the query's task and
	// must not block: hand the record to a buffer. The record is the core's, valid only during
	// the call (a record is large: it is built once and not copied for the hook); copy what
	// is kept, and change nothing.
	OnFinish func(*Record)
	// Check, when set, runs after routing and before the cache and the queue, with the group the
	// query was routed to (access control, read-only groups, blocked statements). A non-nil
	// error refuses the query; a *query.Error keeps its SQLSTATE (e.g. CodeAccessDenied).
	Check func(req *query.Request, group string) error
	// GuardPoll is how often a queued query retries the guard without a local wake-up.
	GuardPoll time.Duration
	// NewQueryID makes query ids; nil means 16 hex digits from Env.Rand.
	NewQueryID func() string
	// CacheMaxBytes bounds the result cache over all groups; 0 means CacheMaxBytesDefault,
	// negative means no bound beyond each group's own.
	CacheMaxBytes int64
	// Locality, when set, sends cacheable queries of groups with cache.preferredWorker to the
	// worker owning their cache key; nil runs every query here.
	Locality Locality
	// StartWait is how long after New a query that arrives before the first configuration is
	// active waits for it (AwaitReady); 0 means StartWaitDefault, negative means not at all.
	StartWait time.Duration
}

// StartWaitDefault is Options.StartWait's default: a worker that is starting gets its first
// configuration from the control plane within milliseconds, and a client sent to it then
// should see its query run, not a "not configured yet" refusal. A node still unconfigured
// this long after its start refuses at once: its control plane is slow or down.
const StartWaitDefault = 5 * time.Second

// CacheMaxBytesDefault bounds a core's result cache when Options leave it unset.
const CacheMaxBytesDefault = 256 << 20

// Core is the proxy core: a query.Backend over the active Runtime.
type Core struct {
	env      env.Env
	guard    Guard
	idle     capacity.IdleTaker // under NoWait, for a guard that is not AtOnce (nil: it keeps nothing idle)
	onFinish func(*Record)
	check    func(req *query.Request, group string) error
	poll     time.Duration
	retryMax time.Duration // a queued head's longest back-off: poll, or less (RetryCapper)
	newID    func() string
	ids      idArena // newID's strings, by default
	metrics  *metrics
	cache    *resultCache
	locality Locality
	paths    pathCounters
	active   atomic.Pointer[Runtime]
	// changed is notified whenever a slot is released or a queue's head leaves, so queued
	// queries look again.
	changed env.Signal
	// startBy ends the start: queries that arrive before the first activation wait until then.
	startBy time.Time
	// open lists the admissions and result streams not finished yet (with invariants on).
	open invariants.Ledger

	// queued is how many queries wait in queues, over all groups: read without mu, so that
	// an admission and a release ask no lock whether anyone waits (see release).
	queued atomic.Int64

	mu sync.Mutex
	// running: cluster -> slots this node holds (runningOf), changed by atomic operations
	// without mu (mu guards the map): an admission and its release take no lock.
	running    map[string]*atomic.Int64
	queues     map[string][]uint64 // group -> tickets of waiting queries, oldest first
	userQueued map[string]int      // user -> queries waiting, over all groups
	tickets    uint64
}

var _ query.Backend = (*Core)(nil)

// New returns a core with no runtime: Ready is false until Activate.
func New(opts Options) *Core {
	if opts.Env == nil {
		panic("proxy.New: Options.Env is required")
	}
	c := &Core{
		env:        opts.Env,
		guard:      opts.Guard,
		onFinish:   opts.OnFinish,
		check:      opts.Check,
		poll:       opts.GuardPoll,
		newID:      opts.NewQueryID,
		metrics:    newMetrics(opts.Registerer),
		cache:      newResultCache(cacheBound(opts.CacheMaxBytes)),
		locality:   opts.Locality,
		changed:    opts.Env.NewSignal(),
		running:    map[string]*atomic.Int64{},
		queues:     map[string][]uint64{},
		userQueued: map[string]int{},
	}
	if c.guard == nil {
		c.guard = coreCount{c}
	}
	c.idle, _ = c.guard.(capacity.IdleTaker)
	if n, ok := c.guard.(FreedNotifier); ok {
		n.OnFreed(c.wakeQueued)
	}
	if c.poll <= 0 {
		c.poll = GuardPollDefault
	}
	c.retryMax = c.poll
	if rc, ok := c.guard.(RetryCapper); ok && rc.RetryMax() > 0 {
		c.retryMax = min(c.poll, rc.RetryMax())
	}
	if c.newID == nil {
		c.newID = func() string { return c.ids.hex16(c.env.Rand().Uint64()) }
	}
	c.startBy = c.env.Now().Add(startWait(opts.StartWait))
	return c
}

func startWait(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return StartWaitDefault
	case d < 0:
		return 0
	}
	return d
}

// wakeQueued wakes the queued queries, if there are any: a lease guard frees slots (OnFreed) at
// every finished query, and a wake-up nobody waits for still costs. A query that enqueues after
// the check tries the members after the slot was freed, and sees it itself.
func (c *Core) wakeQueued() {
	if c.queued.Load() > 0 {
		c.changed.Notify()
	}
}

// hex16 is fmt.Sprintf("%016x", v) without fmt's cost: two ids per relayed statement.
func hex16(v uint64) string {
	var b [16]byte
	putHex16(b[:], v)
	return string(b[:])
}

func cacheBound(n int64) int64 {
	switch {
	case n == 0:
		return CacheMaxBytesDefault
	case n < 0:
		return 0
	}
	return n
}

// Activate makes rt the runtime for new queries. Queries already admitted or queued finish on
// the runtime they started with; the old runtime closes its engines once they are done.
func (c *Core) Activate(rt *Runtime) {
	if rt == nil {
		panic("proxy: Activate(nil)")
	}
	old := c.active.Swap(rt)
	if old != nil && old != rt {
		old.retire()
	}
	c.showHealth(old, rt)
	c.changed.Notify()
}

// showHealth sets queryflux_cluster_healthy for rt's enabled clusters and drops the series of
// the clusters old had and rt has not (removed or disabled).
func (c *Core) showHealth(old, rt *Runtime) {
	if old != nil && old != rt {
		for _, name := range old.names {
			if cl := rt.clusters[name]; cl == nil || !cl.enabled {
				c.metrics.healthy.DeleteLabelValues(name)
			}
		}
	}
	for _, name := range rt.names {
		if cl := rt.clusters[name]; cl.enabled {
			c.metrics.healthy.WithLabelValues(name).Set(healthValue(cl.healthy.Load()))
		}
	}
}

func healthValue(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// Close retires the active runtime once the node's frontends are closed and drained, so that
// its engines close when its last query ends: an embedded DuckDB file is checkpointed (a copy
// of the file alone holds every committed write, no WAL beside it) and pooled engine
// connections end as their protocol says. Later queries fail as not configured.
func (c *Core) Close() {
	if rt := c.active.Swap(nil); rt != nil {
		rt.retire()
	}
	c.changed.Notify()
}

// Ready reports whether a runtime has been activated.
func (c *Core) Ready() bool { return c.active.Load() != nil }

// AwaitReady reports whether a runtime is active, waiting for the first one while the node is
// starting (Options.StartWait after New) unless ctx ends first or must not wait (NoWait).
// Frontends ask it before they refuse a login or a query as not configured yet.
func (c *Core) AwaitReady(ctx context.Context) bool {
	for {
		seen := c.changed.Seq()
		if c.active.Load() != nil {
			return true
		}
		left := c.startBy.Sub(c.env.Now())
		if left <= 0 || mustNotWait(ctx) || ctx.Err() != nil {
			return false
		}
		wctx, cancel := c.env.WithTimeout(ctx, left)
		_ = c.changed.Wait(wctx, seen) // an end of wctx shows as left <= 0 or ctx.Err() above
		cancel()
	}
}

// CheckDatabase is query.DatabaseChecker over the active runtime (see Runtime.CheckDatabase);
// before the first activation every name passes (queries then fail as not configured).
func (c *Core) CheckDatabase(protocol, name string) error {
	rt := c.active.Load()
	if rt == nil || protocol != query.ProtocolPostgres {
		return nil
	}
	return rt.CheckDatabase(name)
}

// Unclosed describes this core's admissions and result streams that are not finished yet, while
// invariants are on (tests, simulator runs); empty once every query is over. A Rows never closed
// shows here: it would hold its slot forever.
func (c *Core) Unclosed() []string { return c.open.Unclosed() }

// Runtime is the active runtime, or nil before the first activation.
func (c *Core) Runtime() *Runtime { return c.active.Load() }

// Running is the number of capacity slots this node holds on cluster.
func (c *Core) Running(cluster string) int {
	c.mu.Lock()
	n := c.running[cluster]
	c.mu.Unlock()
	if n != nil {
		return int(n.Load())
	}
	return 0
}

// runningOf is cluster's running count, made at its first slot (and never removed); under c.mu.
func (c *Core) runningOf(cluster string) *atomic.Int64 {
	n := c.running[cluster]
	if n == nil {
		n = new(atomic.Int64)
		c.running[cluster] = n
	}
	return n
}

// countOf is runningOf(cl.name), kept on cl: found without c.mu once kept. A runtime
// activated on several cores (tests) keeps the last one's, and finds its own again by name.
func (c *Core) countOf(cl *cluster) *atomic.Int64 {
	if cc := cl.count.Load(); cc != nil && cc.core == c {
		return cc.n
	}
	c.mu.Lock()
	n := c.runningOf(cl.name)
	c.mu.Unlock()
	cl.count.Store(&clusterCount{core: c, n: n})
	return n
}

// runningOn is Running(cl.name).
func (c *Core) runningOn(cl *cluster) int { return int(c.countOf(cl).Load()) }

// takeCounted takes one of n's slots when fewer than limit are taken: exact under any number
// of takers, with no lock.
func takeCounted(n *atomic.Int64, limit int) bool {
	for {
		v := n.Load()
		if v >= int64(limit) {
			return false
		}
		if n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// Queued is the number of queries waiting for a slot in group.
func (c *Core) Queued(group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queues[group])
}

// enter pins the active runtime for one query, waiting for the first while the node is
// starting (AwaitReady).
func (c *Core) enter(ctx context.Context) (*Runtime, error) {
	for {
		rt := c.active.Load()
		if rt == nil {
			if !c.AwaitReady(ctx) {
				return nil, query.ErrNotConfigured
			}
			continue
		}
		if rt.pin() {
			return rt, nil
		}
		// rt was retired between Load and pin: a newer one is active; take that.
	}
}

// pinActive pins the active runtime for a reader of its engines outside any query (a health
// check, a login's questions, a client's hang-up), so that none of them closes under it; nil
// before the first activation. It never waits. The caller unpins it.
func (c *Core) pinActive() *Runtime {
	for {
		rt := c.active.Load()
		if rt == nil || rt.pin() {
			return rt
		}
	}
}

// Admission is a query that has been routed and holds a capacity slot on Cluster. Whoever runs
// it (Execute, or a passthrough frontend relaying the engine's own wire messages) must call
// Finish exactly once, which releases the slot and reports the query's Record.
type Admission struct {
	QueryID   string
	Group     string
	Cluster   string
	Engine    query.Engine
	Trace     []TraceStep
	QueueWait time.Duration
	Runtime   *Runtime

	core *Core
	req  *query.Request
	grp  *group   // Runtime's group named Group
	cl   *cluster // the cluster named Cluster, whose running count release takes the slot off (nil: found by name)
	// slot is the capacity claim. A passthrough runner should register its cancel with
	// Slot().OnLost, as Execute does.
	slot     Slot
	start    time.Time
	admitted time.Time
	done     invariants.Once
	run      runContext // set by RunContext (passthrough)
	series   *boundSeries
	relay    Relay // what Relay hands out
	// rec is where the query's Record is built when it ends, OnFinish's argument: no copy of
	// it for the hook, and no allocation (a record on the stack escapes to the hook). A
	// session's admission reports no query of its own: its rec is its relayed statements'.
	rec Record
}

// Slot is the admission's capacity claim (for OnLost / Lost).
func (a *Admission) Slot() Slot { return a.slot }

// Finish releases the slot and reports the query: rows and bytes streamed, and err (nil for
// success, context.Canceled when the client went away).
func (a *Admission) Finish(rows, bytes int64, err error) {
	end := a.core.env.Now()
	if !a.release() {
		return
	}
	// Every field written in its place: a Record literal assigned to a.rec is built aside and
	// copied, ~70 instructions a statement (TestFinishWritesEveryRecordField).
	rec, req := &a.rec, a.req
	rec.QueryID, rec.User, rec.Protocol, rec.Database = a.QueryID, req.User, req.Protocol, req.Database
	rec.Group, rec.Cluster, rec.SQL, rec.Shape = a.Group, a.Cluster, req.SQL, req.Shape
	rec.Status, rec.ErrorCode, rec.Error = statusOf(err), "", ""
	rec.QueueMs, rec.ExecMs, rec.Rows, rec.Bytes = millis(a.QueueWait), millis(end.Sub(a.admitted)), rows, bytes
	rec.CacheHit, rec.Trace, rec.Start, rec.End = false, a.Trace, a.start, end
	fillError(rec, err)
	a.core.reportBound(a.Runtime, a.series, rec)
}

// finishQuiet releases the slot and unpins the runtime without reporting a query: for
// admissions that stand for a session or a Describe, whose statements report themselves.
func (a *Admission) finishQuiet() {
	if a.release() {
		a.Runtime.unpin()
	}
}

// release gives the slot back and wakes the queued queries. It reports false, doing nothing,
// when the admission was already finished (a violation with invariants on).
func (a *Admission) release() bool {
	if !a.done.Close("admission", a.QueryID) {
		return false
	}
	c := a.core
	a.slot.Release()
	var n *atomic.Int64
	if a.cl != nil && a.cl.name == a.Cluster {
		n = c.countOf(a.cl)
	} else {
		c.mu.Lock()
		n = c.runningOf(a.Cluster)
		c.mu.Unlock()
	}
	running := n.Add(-1)
	// Only queued queries wait for changed. One that enqueues after this check (its count in
	// c.queued comes first) tries the members after it, so after the count went down above,
	// and sees the freed slot itself: both are sequentially consistent atomics.
	waiting := c.queued.Load() > 0
	if running < 0 {
		panic(fmt.Sprintf("proxy: running count on %s went negative", a.Cluster))
	}
	a.series.running.Add(-1)
	if waiting {
		c.changed.Notify()
	}
	return true
}

func baseRecord(id string, req *query.Request, start, end time.Time, trace []TraceStep) Record {
	return Record{
		QueryID: id, User: req.User, Protocol: req.Protocol, Database: req.Database, SQL: req.SQL,
		Shape: req.Shape, Trace: trace, Start: start, End: end,
	}
}

// report counts a finished query, hands its record to OnFinish and unpins its runtime.
func (c *Core) report(rt *Runtime, rec *Record) {
	c.reportBound(rt, c.metrics.series(rec.Group, rec.Cluster), rec)
}

// reportBound is report with the record's series already resolved.
func (c *Core) reportBound(rt *Runtime, s *boundSeries, rec *Record) {
	c.metrics.finished(s, rec.Status, rec.ErrorCode, rec.End.Sub(rec.Start).Seconds())
	if c.onFinish != nil {
		c.onFinish(rec)
	}
	rt.unpin()
}

// refuse reports a query that ended before it got a slot, and returns err.
func (c *Core) refuse(rt *Runtime, id string, req *query.Request, start time.Time, dec Decision, err error) error {
	rec := new(Record) // OnFinish's argument: a refusal's own
	*rec = baseRecord(id, req, start, c.env.Now(), dec.Trace)
	rec.Group = dec.Group
	rec.Status = statusOf(err)
	fillError(rec, err)
	rec.QueueMs = millis(rec.End.Sub(start))
	c.report(rt, rec)
	return err
}

// Admit routes req, picks a member cluster and takes a capacity slot, queueing if none is free.
// It does not run the query. On error the query has already been reported as finished.
func (c *Core) Admit(ctx context.Context, req *query.Request) (*Admission, error) {
	r, ok, err := c.route(ctx, req, false)
	if !ok {
		return nil, err
	}
	return c.admit(ctx, req, &r, nil)
}

// routed is a query routed and checked, pinning its runtime until it is admitted, refused or
// let go (letGo).
type routed struct {
	placement
	id    string
	start time.Time
	// memoHit: the decision is the session's kept one (routeMemo), which need not be kept again
	memoHit bool
}

// route pins the active runtime, gives the query its id, routes it and checks it (readOnly,
// blockedStatements, Options.Check); ok is false, with the error, when it did not route it. A
// refused query has been reported. Every way into the core starts here. relay is set by the
// relay paths: on a runtime with passthrough off, route then answers not ok and a nil error
// before anything else, and the caller takes the Arrow path. The routed query is a value (the
// caller's, not one more allocation per query).
func (c *Core) route(ctx context.Context, req *query.Request, relay bool) (r routed, ok bool, err error) {
	ok, err = c.routeInto(ctx, req, relay, &r, nil)
	return r, ok, err
}

// routeInto is route writing the routed query into r, which must be zero: for the relay paths,
// where returning it whole (~100 bytes) cost ~50 instructions a statement. r is written only
// when ok. memo (nil: none) is the client session's last decision, taken when it holds for req
// under the active runtime (routed.memoHit).
func (c *Core) routeInto(ctx context.Context, req *query.Request, relay bool, r *routed, memo *routeMemo) (ok bool, err error) {
	start := c.env.Now()
	rt, err := c.enter(ctx)
	if err != nil {
		return false, err
	}
	if relay && rt.noRelay {
		rt.unpin()
		return false, nil
	}
	id := c.newID()
	var dec Decision
	hit := false
	if memo != nil && rt.keepRoutes {
		dec, hit = memo.decided(rt, req)
	}
	if !hit {
		dec = rt.Route(req)
	}
	g, err := c.checkRouted(req, rt, dec)
	if err != nil {
		return false, c.refuse(rt, id, req, start, dec, err)
	}
	r.rt, r.dec, r.g, r.noWait, r.memoHit = rt, dec, g, mustNotWait(ctx), hit
	r.id, r.start = id, start
	return true, nil
}

// letGo unpins the runtime of a query that takes another way in (it is routed again there).
func (r *routed) letGo() { r.rt.unpin() }

// admit takes a slot in r's group for a routed, checked query. While it waits, a newer runtime
// may replace r's: the query then follows it (see follow), so the Admission's Runtime and Group
// may differ from those it was routed with. The Admission is into when that is not nil (a
// caller that allocates it with what goes with it).
func (c *Core) admit(ctx context.Context, req *query.Request, r *routed, into *Admission) (*Admission, error) {
	p, id, start := &r.placement, r.id, r.start
	var spare Slot
	if into != nil {
		spare = into.slot // its caller's last slot, released (OpenWireInto): memory for the next
	}
	slot, cl, err := c.acquire(ctx, p, req, start, spare)
	if errors.Is(err, engine.ErrWouldWait) {
		p.rt.unpin() // nothing happened: the caller asks again where it may wait
		return nil, err
	}
	if err != nil {
		// Waits that ended without a slot (timeout, cancel) count in the histogram too.
		c.metrics.series(p.g.name, "").queueDuration.observe(c.env.Now().Sub(start).Seconds())
		return nil, c.refuse(p.rt, id, req, start, p.dec, err)
	}
	now := start // under NoWait nothing waited: the clock is read once per admission
	if !p.noWait {
		now = c.env.Now()
	}
	s := c.metrics.series(p.g.name, cl.name)
	wait := now.Sub(start)
	s.running.Add(1)
	s.queueDuration.observe(wait.Seconds())
	adm := into
	if adm == nil {
		adm = new(Admission)
	}
	// Every field but the relay and the record, which Relay and Finish set whole before anything
	// reads them: an event loop's client reuses one Admission for every statement, where zeroing
	// and writing their words again cost ~100 instructions each (TestAdmitWritesEveryFieldButTheRelay).
	adm.QueryID, adm.Group, adm.Cluster, adm.Engine, adm.Trace = id, p.g.name, cl.name, cl.engine, p.dec.Trace
	adm.QueueWait, adm.Runtime = wait, p.rt
	adm.core, adm.req, adm.grp, adm.cl, adm.slot = c, req, p.g, cl, slot
	adm.start, adm.admitted, adm.done, adm.run, adm.series = start, now, invariants.Once{}, runContext{}, s
	c.open.Open(&adm.done, "admission", id, req.SQL)
	return adm, nil
}

// placement is where a query waits for a slot: the runtime it pins, its routing decision and
// the group it was routed to.
type placement struct {
	rt  *Runtime
	dec Decision
	g   *group
	// noWait: the query's context is NoWait's. Read once, where it is routed (a context
	// lookup is ~50 instructions, and admit, acquire and OpenWireInto each asked).
	noWait bool
	// affinity: the query's query.Affinity when its caller gave it (OpenWireInto's owner), for
	// the guard's idle take; 0: read from the context.
	affinity uint64
}

// follow moves a waiting query onto the active runtime if a newer one replaced p.rt: routed
// and checked again under the new configuration (which may refuse it), pinning the new runtime
// and unpinning the old. Otherwise a query queued on a retired runtime would keep waiting on
// that configuration's groups and clusters, as they were when it arrived.
func (c *Core) follow(ctx context.Context, p *placement, req *query.Request) error {
	if c.active.Load() == p.rt {
		return nil
	}
	rt, err := c.enter(ctx)
	if err != nil {
		return err
	}
	dec := rt.Route(req)
	g, err := c.checkRouted(req, rt, dec)
	old := p.rt
	p.rt, p.dec = rt, dec
	old.unpin()
	if err != nil {
		return err
	}
	p.g = g
	return nil
}

// checkRouted returns the routed group, or the error that refuses the query: no route, the
// group's readOnly / blockedStatements, or the Check hook's verdict.
func (c *Core) checkRouted(req *query.Request, rt *Runtime, dec Decision) (*group, error) {
	g := dec.g // rt's own decision for the protocol knows its group
	if g == nil {
		g = rt.groups[dec.Group]
	}
	if g == nil {
		if _, withheld := rt.withheld[dec.Group]; withheld {
			return nil, rt.notEligible(dec.Group)
		}
		return nil, &query.Error{Code: query.CodeNoRoute, Message: "no routing rule matched and no routingFallback is set"}
	}
	if err := checkStatements(g, req); err != nil {
		return nil, err
	}
	if c.check != nil {
		if err := c.check(req, g.name); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// acquire takes a slot on one of the placement's group's members. A query queues (FIFO per
// group, bounded by maxQueuedQueries) when no member has a slot or others are already waiting,
// and gives up after the group's capacityWaitTimeout (from start) or when ctx ends. A query
// that waits follows every runtime that replaces its own (follow), keeping its place in line
// when its group keeps its name.
func (c *Core) acquire(ctx context.Context, p *placement, req *query.Request, start time.Time, spare Slot) (Slot, *cluster, error) {
	if !p.g.usable() {
		return nil, nil, noHealthy(p.g)
	}
	if c.queued.Load() == 0 || c.Queued(p.g.name) == 0 {
		take := c.guard.Acquire
		if p.noWait && !c.AdmitsAtOnce() {
			take = nil
			if c.idle != nil {
				take = func(ctx context.Context, cluster string, limit int) (Slot, error) {
					affinity := p.affinity
					if affinity == 0 {
						affinity = query.Affinity(ctx)
					}
					// start is now under NoWait (admit: nothing waited)
					if s := c.idle.TakeIdle(affinity, cluster, limit, spare, start); s != nil {
						return s, nil
					}
					return nil, ErrNoSlot
				}
			}
		} else if _, own := c.guard.(coreCount); own {
			take = nil
			if slot, cl, err := c.countMembers(ctx, p.g); slot != nil || err != nil {
				return slot, cl, err
			}
		}
		if take != nil {
			if slot, cl, err := c.tryMembers(ctx, p.g, take); slot != nil || err != nil {
				return slot, cl, err
			}
		}
	}
	if p.noWait {
		return nil, nil, engine.ErrWouldWait
	}
	w := waiter{user: req.User, userMax: p.rt.limits.MaxQueuedPerUser}
	ticket, err := c.enqueue(p.g, w)
	if err != nil {
		return nil, nil, err
	}
	queuedIn := p.g
	defer func() { c.dequeue(queuedIn, w, ticket) }()
	retry := min(guardRetryMin, c.retryMax)
	for {
		seen := c.changed.Seq()
		if err := c.follow(ctx, p, req); err != nil {
			return nil, nil, err
		}
		if p.g.name != queuedIn.name {
			// Routed to another group by the new configuration: there as a new arrival would be,
			// a free slot at once when no one waits in its line (a group without a queue too),
			// else the back of its line.
			if c.Queued(p.g.name) == 0 {
				if slot, cl, err := c.tryMembers(ctx, p.g, c.guard.Acquire); slot != nil || err != nil {
					return slot, cl, err
				}
			}
			if ticket, err = c.requeue(queuedIn, p.g, w, ticket); err != nil {
				queuedIn = nil
				return nil, nil, err
			}
			queuedIn = p.g
		}
		g := p.g
		wait := c.poll
		if c.isHead(g.name, ticket) {
			slot, cl, err := c.tryMembers(ctx, g, c.guard.Acquire)
			if slot != nil || err != nil {
				return slot, cl, err
			}
			if !g.usable() {
				return nil, nil, noHealthy(g)
			}
			wait = min(env.Jitter(c.env.Rand(), retry, 0.2), c.retryMax)
			retry = min(2*retry, c.retryMax)
		}
		if g.waitTimeout > 0 {
			left := start.Add(g.waitTimeout).Sub(c.env.Now())
			if left <= 0 {
				c.metrics.rejections.WithLabelValues(g.name, "timeout").Inc()
				return nil, nil, &query.Error{Code: query.CodeCapacityTimeout, Retryable: true,
					Message: fmt.Sprintf("no capacity in cluster group %s within %s", g.name, g.waitTimeout)}
			}
			wait = min(wait, left)
		}
		wctx, cancel := c.env.WithTimeout(ctx, wait)
		_ = c.changed.Wait(wctx, seen)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
	}
}

func noHealthy(g *group) error {
	return &query.Error{Code: query.CodeEngine, Retryable: true,
		Message: fmt.Sprintf("cluster group %s has no enabled, healthy cluster", g.name)}
}

// countMembers is tryMembers with the core's own count as the guard (coreCount's Acquire): the
// count found on each cluster rather than by its name.
func (c *Core) countMembers(ctx context.Context, g *group) (Slot, *cluster, error) {
	for _, m := range g.candidates(c.runningOn, c.env.Rand()) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if takeCounted(c.countOf(m.cluster), m.cluster.cap) {
			return countedSlot{}, m.cluster, nil
		}
	}
	return nil, nil, nil
}

// tryMembers asks for a slot (take: the guard's Acquire or takeIdle) on each candidate in the
// strategy's order. It returns (nil, nil, nil) when every candidate is full.
func (c *Core) tryMembers(ctx context.Context, g *group, take func(context.Context, string, int) (Slot, error)) (Slot, *cluster, error) {
	for _, m := range g.candidates(c.runningOn, c.env.Rand()) {
		slot, err := take(ctx, m.cluster.name, m.cluster.cap)
		switch {
		case err == nil:
			if _, counted := slot.(countedSlot); counted {
				return slot, m.cluster, nil // counted in c.running by coreCount, within the cap
			}
			running := int(c.countOf(m.cluster).Add(1))
			if invariants.Enabled() && running > m.cluster.cap {
				invariants.Fail("proxy: %d queries running on cluster %s, over its cap %d: the guard granted past its limit", running, m.cluster.name, m.cluster.cap)
			}
			return slot, m.cluster, nil
		case errors.Is(err, ErrNoSlot):
			continue
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		default: // the guard's error names the control plane's URL: for the log only
			h := query.CoordinationUnavailable(fmt.Errorf("capacity guard for cluster %s: %w", m.cluster.name, err))
			c.env.Logger().Warn("capacity coordination unavailable; the client sees only its code", "cluster", m.cluster.name, "err", redact.Error(h))
			return nil, nil, h
		}
	}
	return nil, nil, nil
}

// waiter is who is about to queue, for the per-user bound (settings.guardrails.maxQueuedPerUser).
type waiter struct {
	user    string
	userMax int // 0 means no per-user bound
}

func (c *Core) enqueue(g *group, w waiter) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queues[g.name]) >= g.maxQueued {
		c.metrics.rejections.WithLabelValues(g.name, "full").Inc()
		return 0, &query.Error{Code: query.CodeQueueFull, Retryable: true,
			Message: fmt.Sprintf("cluster group %s is at capacity and its queue is full (maxQueuedQueries %d)", g.name, g.maxQueued)}
	}
	if w.userMax > 0 && c.userQueued[w.user] >= w.userMax {
		c.metrics.rejections.WithLabelValues(g.name, "user").Inc()
		return 0, &query.Error{Code: query.CodeQueueFull, Retryable: true,
			Message: fmt.Sprintf("user %s already has %d queries waiting for capacity (maxQueuedPerUser)", w.user, w.userMax)}
	}
	c.tickets++
	c.queues[g.name] = append(c.queues[g.name], c.tickets)
	c.queued.Add(1)
	c.userQueued[w.user]++
	c.metrics.queued.WithLabelValues(g.name).Inc()
	return c.tickets, nil
}

// requeue moves a waiter's ticket from the line of group from to the back of group to's.
func (c *Core) requeue(from, to *group, w waiter, ticket uint64) (uint64, error) {
	c.dequeue(from, w, ticket)
	return c.enqueue(to, w)
}

func (c *Core) dequeue(g *group, w waiter, ticket uint64) {
	if g == nil {
		return // already out of every line
	}
	c.mu.Lock()
	q := c.queues[g.name]
	i := 0
	for i < len(q) && q[i] != ticket {
		i++
	}
	if i == len(q) || c.userQueued[w.user] <= 0 {
		c.mu.Unlock()
		panic(fmt.Sprintf("proxy: ticket %d of user %q not in queue of group %s", ticket, w.user, g.name))
	}
	c.queues[g.name] = append(q[:i:i], q[i+1:]...)
	c.queued.Add(-1)
	if len(c.queues[g.name]) == 0 {
		delete(c.queues, g.name)
	}
	if c.userQueued[w.user]--; c.userQueued[w.user] == 0 {
		delete(c.userQueued, w.user)
	}
	c.mu.Unlock()
	c.metrics.queued.WithLabelValues(g.name).Dec()
	c.changed.Notify() // the next in line may now be the head
}

func (c *Core) isHead(group string, ticket uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queues[group]
	return len(q) > 0 && q[0] == ticket
}

// CheckHealth pings every enabled cluster of the active runtime, each within timeout, and marks
// it healthy or not. The caller schedules it (env.Every).
func (c *Core) CheckHealth(ctx context.Context, timeout time.Duration) {
	rt := c.pinActive()
	if rt == nil {
		return
	}
	defer rt.unpin()
	for _, name := range rt.names {
		cl := rt.clusters[name]
		if !cl.enabled || cl.engine == nil {
			continue
		}
		pctx, cancel := c.env.WithTimeout(ctx, timeout)
		key := rt.checks.start(cancel)
		err := cl.engine.Ping(pctx)
		rt.checks.end(key)
		cancel()
		if ctx.Err() != nil || rt.checks.isRetired() {
			return // a replaced configuration's engines: their health is no one's concern
		}
		if err != nil {
			c.metrics.healthFails.WithLabelValues(name).Inc()
		}
		c.metrics.healthy.WithLabelValues(name).Set(healthValue(err == nil))
		if was := cl.healthy.Swap(err == nil); was != (err == nil) {
			if err != nil {
				c.env.Logger().Warn("cluster health changed", "cluster", name, "healthy", false, "err", redact.Error(err))
			} else {
				c.env.Logger().Info("cluster health changed", "cluster", name, "healthy", true)
			}
			c.changed.Notify()
		}
	}
}

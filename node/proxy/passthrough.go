package proxy

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
)

// Passthrough: when the client's protocol and the engine's are the same and nothing
// needs the values, a frontend relays the engine's own wire messages instead of decoding them
// into Arrow and encoding them again. The core still routes, checks (Options.Check, readOnly,
// blockedStatements), queues, takes the capacity slot, applies the group's query timeout and
// the lease's OnLost, bounds the result (guardrails count wire bytes there) and reports the
// query to history; only the decoding is skipped.
//
// What needs the values, and so keeps a query on the Arrow path: the group's result cache
// (it stores Arrow batches), settings.passthrough: false, and a member engine the frontend
// cannot relay from (another protocol: a cross-protocol route).

// Paths a query can take through the core, the label values of queryflux_query_path_total.
const (
	PathPassthrough = "passthrough" // engine wire messages relayed as they are
	PathArrow       = "arrow"       // decoded into Arrow batches and encoded by the frontend
	PathCache       = "cache"       // answered from the result cache
)

// PathStats counts finished-or-running queries by the path they took since the core started.
type PathStats struct {
	Passthrough int64 `json:"passthrough"`
	Arrow       int64 `json:"arrow"`
	Cache       int64 `json:"cache"`
}

type pathCounters struct{ passthrough, arrow, cache atomic.Int64 }

// countPath records that one query took path.
func (c *Core) countPath(path string) {
	switch path {
	case PathPassthrough:
		c.paths.passthrough.Add(1)
		c.metrics.pathPassthrough.Inc()
	case PathArrow:
		c.paths.arrow.Add(1)
		c.metrics.pathArrow.Inc()
	case PathCache:
		c.paths.cache.Add(1)
		c.metrics.pathCache.Inc()
	default:
		panic("proxy: unknown query path " + path)
	}
}

// Paths says how many queries took each path (for /worker/status and the admin status).
func (c *Core) Paths() PathStats {
	return PathStats{Passthrough: c.paths.passthrough.Load(), Arrow: c.paths.arrow.Load(), Cache: c.paths.cache.Load()}
}

// ExtendedMetadata reports whether every cluster engine that can say whether it has MariaDB's
// extended metadata (mysqlengine) has it, and one does: a MySQL frontend then offers it to its
// clients, and relays the column definitions of those that ask with it.
func (c *Core) ExtendedMetadata() bool {
	rt := c.pinActive()
	if rt == nil {
		return false
	}
	defer rt.unpin()
	has := false
	for _, name := range rt.names {
		m, ok := rt.clusters[name].engine.(interface{ ExtendedMetadata() bool })
		if !ok {
			continue
		}
		if !m.ExtendedMetadata() {
			return false
		}
		has = true
	}
	return has
}

// LoginTimeZone is the TimeZone a PostgreSQL frontend reports at login: the one every cluster
// engine's server reports (pgengine's ServerTimeZone), when all are PostgreSQL engines whose
// statements are relayed (a relayed timestamptz is written in that zone) and agree; "" when
// not (the frontend writes rows itself, in UTC) or not known yet.
func (c *Core) LoginTimeZone() string {
	rt := c.pinActive()
	if rt == nil {
		return ""
	}
	defer rt.unpin()
	if rt.noRelay {
		return ""
	}
	zone := ""
	for _, name := range rt.names {
		z, ok := rt.clusters[name].engine.(interface{ ServerTimeZone() string })
		if !ok {
			return ""
		}
		tz := z.ServerTimeZone()
		if tz == "" || zone != "" && tz != zone {
			return ""
		}
		zone = tz
	}
	return zone
}

// AdmitPassthrough routes and checks req and, when it may be relayed, takes its capacity slot:
// ok is true and the caller runs the query on adm.Engine (within adm.RunContext) and calls
// adm.Finish. canRelay says whether the frontend can relay from an engine; every member of
// the routed group must pass it (the member is chosen only when the slot is taken).
//
// ok is false with a nil error when the query must take the Arrow path (call Execute); a
// non-nil error refused the query and has been reported.
func (c *Core) AdmitPassthrough(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool) (adm *Admission, ok bool, err error) {
	return c.AdmitPassthroughInto(ctx, req, canRelay, nil)
}

// AdmitPassthroughInto is AdmitPassthrough making the Admission in into rather than anew: for
// a caller that runs its statements one at a time and keeps one Admission for all of them (an
// event loop's client). into must be finished, or never admitted; one that is not is left
// alone (a new Admission is made; with invariants on it is a violation).
func (c *Core) AdmitPassthroughInto(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool, into *Admission) (adm *Admission, ok bool, err error) {
	if into != nil && into.core != nil && !into.done.Closed() {
		if invariants.Enabled() {
			invariants.Fail("proxy: admission %s reused before it was finished", into.QueryID)
		}
		into = nil
	}
	var r routed
	ok, err = c.routeInto(ctx, req, true, &r, nil)
	if !ok {
		return nil, false, err
	}
	if r.g.cache.TTL > 0 || !r.g.relayable(canRelay) {
		r.letGo()
		return nil, false, nil
	}
	adm, err = c.admit(ctx, req, &r, into)
	if err != nil {
		return nil, false, err
	}
	c.countPath(PathPassthrough)
	return adm, true, nil
}

// relayable reports whether every enabled member's engine passes canRelay.
func (g *group) relayable(canRelay func(query.Engine) bool) bool {
	for _, m := range g.members {
		if m.cluster.enabled && m.cluster.engine != nil && !canRelay(m.cluster.engine) {
			return false
		}
	}
	return true
}

// Relay is one statement a frontend runs by relaying the engine's own wire messages: a query
// admitted on a member (Admission.Relay) or a statement of a pinned session (BeginRelay). Both
// end the same way, in one place: Finish.
type Relay struct {
	// Engine is where to run it: the member's query.Engine or the pinned engine.Session. The
	// frontend asserts the relaying interface it speaks (engine.PGWire, mysqlwire.RawEngine).
	Engine any
	// Ctx is the statement's engine context: it ends with the caller's, on the group's query
	// timeout and when the capacity lease is lost.
	Ctx context.Context

	id       string
	finished invariants.Once

	// An admitted query's (Admission.Relay), which Finish ends with done (the frontend's
	// cancel or the query timeout's): no closure per statement.
	adm  *Admission
	done context.CancelFunc

	// A session's statement (BeginRelay), which finishRelay ends: no closure per statement.
	session *coreSession
	q       *query.Request
	times   statementTimes
	stop    context.CancelFunc // the query timeout's; nil without one
	run     runContext

	// The core's cancel of a session's statement (BeginRelay, OnCancel); never once finished.
	cancelMu  sync.Mutex
	cancelled bool
	onCancel  func()
}

// OnCancel makes fn run once if the core cancels a session's statement (BeginRelay) before it
// finishes, its lease lost; at once if that happened already. fn runs on the canceller's
// goroutine, under its locks: it must not block. It spares a context of the statement's own
// and a context.AfterFunc on it, four allocations per statement. The group's query timeout
// ends Ctx instead, which is then a context of the statement's own, not the caller's.
func (r *Relay) OnCancel(fn func()) {
	r.cancelMu.Lock()
	if r.cancelled && !r.finished.Closed() {
		r.cancelMu.Unlock()
		fn()
		return
	}
	r.onCancel = fn
	r.cancelMu.Unlock()
}

// Cancellable reports whether the core may cancel the statement through OnCancel: a session's
// statement whose slot can be lost. A frontend need not make a hook (an allocation per
// statement) for one it cannot.
func (r *Relay) Cancellable() bool {
	if r.session == nil {
		return false
	}
	_, never := r.session.adm.slot.(capacity.Unlosable)
	return !never
}

// Cancelled reports whether the core cancelled the statement, or its Ctx ended.
func (r *Relay) Cancelled() bool {
	r.cancelMu.Lock()
	cancelled := r.cancelled
	r.cancelMu.Unlock()
	return cancelled || r.Ctx.Err() != nil
}

// LeaseLost is the lost lease's error when the capacity lease the statement runs under is
// lost, nil otherwise. It reads the lease's own term, so it knows before the guard's keeper
// has run: a worker that resumes after a freeze may read its engine connection's end (the
// control plane's fence) before its keeper marks the lease lost, and that end is the lost
// lease's doing, not the engine's failure.
func (r *Relay) LeaseLost() error {
	adm, tx := r.adm, false
	if r.session != nil {
		adm, tx = r.session.adm, true
	}
	if adm == nil || !adm.slot.Lost() {
		return nil
	}
	return errLeaseLost(adm.slot, adm.Cluster, tx)
}

// cancel is the core's cancel of the statement: the OnCancel hook runs unless it finished.
func (r *Relay) cancel() {
	r.cancelMu.Lock()
	if r.cancelled || r.finished.Closed() {
		r.cancelMu.Unlock()
		return
	}
	r.cancelled = true
	fn := r.onCancel
	r.cancelMu.Unlock()
	if fn != nil {
		fn()
	}
}

// CheckLimits fails a result past the guardrails (rows, relayed wire bytes).
func (r *Relay) CheckLimits(rows, bytes int64) error {
	if r.session != nil {
		return r.session.adm.CheckLimits(rows, bytes)
	}
	return r.adm.CheckLimits(rows, bytes)
}

// Finish ends the statement with what was relayed and its outcome. It names err as the client
// should see it (an engine error's SQLSTATE, the group's query timeout, a lost lease) while Ctx
// can still tell, then ends Ctx, reports the statement and returns that error. Call it exactly
// once.
func (r *Relay) Finish(rows, bytes int64, err error) error {
	if !r.finished.Close("relayed statement", r.id) {
		return err
	}
	if r.session != nil {
		return r.session.finishRelay(r, rows, bytes, err)
	}
	err = r.adm.Explain(err)
	r.done()
	r.adm.Finish(rows, bytes, err)
	return err
}

// Relay hands the admitted query to a frontend that relays it; ctx and cancel are the
// frontend's own per-statement context and its cancel (see RunContext). Call it once per
// admission: the Relay is part of the Admission (one allocation per statement less).
func (a *Admission) Relay(ctx context.Context, cancel context.CancelFunc) *Relay {
	rctx, rcancel := a.RunContext(ctx, cancel)
	r := &a.relay
	r.reset(a.QueryID, statementTimes{})
	r.Engine, r.Ctx, r.adm, r.done = a.Engine, rctx, a, rcancel
	return r
}

// reset makes r a new statement's, with id and times and every other field zero but its
// cancelMu (unlocked between statements): field by field, where a whole Relay written cost
// ~170 instructions a statement (TestRelayResetWritesEveryField).
func (r *Relay) reset(id string, times statementTimes) {
	r.Engine, r.Ctx, r.id, r.times = nil, nil, id, times
	r.finished = invariants.Once{}
	r.adm, r.done, r.session, r.q = nil, nil, nil, nil
	r.stop, r.run = nil, runContext{}
	r.cancelled, r.onCancel = false, nil
}

// RunContext is the engine-side context for a relayed query, made from the frontend's own
// per-statement ctx and its cancel: it ends with ctx, on the group's query timeout, and when
// the capacity lease is lost. Without a query timeout it is ctx itself (one context less on
// the hot path). Call the returned cancel when the query is over.
func (a *Admission) RunContext(ctx context.Context, cancel context.CancelFunc) (context.Context, context.CancelFunc) {
	qctx, tcancel, run := a.core.timeoutContext(ctx, a.grp.timeout)
	if tcancel != nil {
		cancel, a.run = tcancel, run
	}
	a.slot.OnLost(cancel)
	if a.slot.Lost() {
		cancel() // the lease is gone already: nothing may start under it
	}
	return a.Tagged(qctx), cancel
}

// Tagged returns ctx carrying the engine tag of the admission's capacity lease, under which the
// engine session runs the query, so that the control plane can stop that work on the engine
// if it reclaims the lease from a dead or silent holder.
func (a *Admission) Tagged(ctx context.Context) context.Context {
	return query.WithEngineTag(ctx, capacity.SlotTag(a.slot))
}

// Explain turns an engine error of a relayed query into what the client should see: a
// SQLSTATE for plain errors, and the group's query timeout or a lost lease named as such.
func (a *Admission) Explain(err error) error {
	if err == nil {
		return nil
	}
	if a.run.ctx != nil {
		err = a.run.explain(a.engineError(err))
	}
	return a.explain(err)
}

// CheckLimits fails a relayed result that passed the guardrails (settings.guardrails); bytes
// are the relayed wire bytes of the rows.
func (a *Admission) CheckLimits(rows, bytes int64) error {
	return a.Runtime.limits.check(rows, bytes)
}

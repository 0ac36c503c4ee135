package proxy

import (
	"context"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/capacity"
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

// AdmitPassthrough routes and checks req and, when it may be relayed, takes its capacity slot:
// ok is true and the caller runs the query on adm.Engine (within adm.RunContext) and calls
// adm.Finish. canRelay says whether the frontend can relay from an engine; every member of
// the routed group must pass it (the member is chosen only when the slot is taken).
//
// ok is false with a nil error when the query must take the Arrow path (call Execute); a
// non-nil error refused the query and has been reported.
func (c *Core) AdmitPassthrough(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool) (adm *Admission, ok bool, err error) {
	start := c.env.Now()
	rt, err := c.enter()
	if err != nil {
		return nil, false, err
	}
	if rt.noRelay {
		rt.unpin()
		return nil, false, nil
	}
	id := c.newID()
	dec := rt.Route(req)
	g, err := c.checkRouted(req, rt, dec)
	if err != nil {
		return nil, false, c.refuse(rt, id, req, start, dec, err)
	}
	if g.cache.TTL > 0 || !g.relayable(canRelay) {
		rt.unpin()
		return nil, false, nil
	}
	adm, err = c.admit(ctx, rt, req, id, dec, g, start)
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

// RunContext is the engine-side context for a relayed query, made from the frontend's own
// per-statement ctx and its cancel: it ends with ctx, on the group's query timeout, and when
// the capacity lease is lost. Without a query timeout it is ctx itself (one context less on
// the hot path). Call the returned cancel when the query is over.
func (a *Admission) RunContext(ctx context.Context, cancel context.CancelFunc) (context.Context, context.CancelFunc) {
	qctx := ctx
	if timeout := a.Runtime.groups[a.Group].timeout; timeout > 0 {
		qctx, cancel = a.core.env.WithTimeout(ctx, timeout)
		a.run = runContext{parent: ctx, ctx: qctx, timeout: timeout}
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

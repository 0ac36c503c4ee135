package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
)

// Execute routes req, answers from the result cache when it can, otherwise admits it (slot,
// queue) and runs it on the chosen cluster's engine. The returned Rows release the slot and
// report the query when closed; the caller must Close them.
func (c *Core) Execute(ctx context.Context, req *query.Request) (query.Rows, error) {
	r, ok, err := c.route(ctx, req, false)
	if !ok {
		return nil, err
	}
	rt, id, g := r.rt, r.id, r.g
	key, cacheable := "", false
	if g.cache.TTL > 0 {
		key, cacheable = cacheKey(req, g.name, g.fingerprint)
	}
	if cacheable {
		if rows, ok := c.fromCache(key, req, &r); ok {
			return rows, nil
		}
		c.metrics.cacheMisses.WithLabelValues(g.name).Inc()
		if rows, err, forwarded := c.remote(ctx, rt, g, req, key); forwarded {
			return rows, err
		}
	}
	adm, err := c.admit(ctx, req, &r, nil)
	if err != nil {
		return nil, err
	}
	if adm.Runtime != rt {
		// A newer runtime took the query while it waited: its group's settings apply, and the
		// result is not cached under the old configuration's key.
		g, cacheable = adm.Runtime.groups[adm.Group], false
	}
	c.countPath(PathArrow)
	// The engine's ctx lives as long as the stream: the engine cancels the query when it ends,
	// on the group's query timeout, or when the guard reports the slot's lease lost. A caller
	// whose ctx is the query's own, carrying its cancel (query.WithStop), has it used as such
	// when the group sets no timeout: one context fewer per statement, each registered with
	// its parent (RESULTS.md, "Trino HTTP ... (#22, session 31, trino)").
	qctx, cancel, run := c.timeoutContext(ctx, g.timeout)
	own := cancel != nil
	if cancel == nil {
		if cancel = query.Stop(ctx); cancel == nil {
			qctx, cancel = c.env.WithCancel(ctx)
			own = true
		}
	}
	adm.slot.OnLost(cancel)
	if adm.slot.Lost() {
		cancel() // the lease is gone already: nothing may start under it
	}
	ectx := adm.Tagged(qctx)
	if own {
		ectx = query.WithStop(ectx, cancel)
	}
	rows, err := adm.Engine.Execute(ectx, inEngineCharset(req, adm.Engine))
	if err != nil {
		cancel()
		err = adm.explain(run.explain(adm.engineError(err)))
		adm.Finish(0, 0, err)
		return nil, err
	}
	s := &stream{inner: rows, id: id, limits: adm.Runtime.limits,
		explain: func(err error) error { return adm.explain(run.explain(adm.engineError(err))) }}
	var fill *cacheFill
	if cacheable && rows.Schema() != nil {
		fill = newCacheFill(rows.Schema(), g.cache.MaxEntryBytes)
		s.tee = fill.write
	}
	s.end = func(n, bytes int64, outcome error) {
		cancel()
		if fill != nil {
			c.keep(fill, key, g.cache, adm.Group, rows.Tag(), outcome)
		}
		adm.Finish(n, bytes, outcome)
	}
	c.open.Open(&s.closed, "rows", id, req.SQL)
	return s, nil
}

// keep stores a result the engine completed in the cache (fill holds its batches).
func (c *Core) keep(fill *cacheFill, key string, spec CacheSpec, group, tag string, outcome error) {
	data := fill.finish()
	if outcome != nil || data == nil {
		return
	}
	c.cache.put(&cacheEntry{key: key, group: group, data: data, tag: tag, expires: c.env.Now().Add(spec.TTL)}, spec.MaxBytes)
	c.metrics.cacheWrites.WithLabelValues(group).Inc()
}

// fromCache serves a hit without a slot or an engine.
func (c *Core) fromCache(key string, req *query.Request, r *routed) (query.Rows, bool) {
	rt, id, dec, start := r.rt, r.id, r.dec, r.start
	e, ok := c.cache.get(key, start)
	if !ok {
		return nil, false
	}
	cached, err := openCached(e)
	if err != nil {
		c.env.Logger().Error("dropping unreadable cache entry", "group", dec.Group, "err", redact.Error(err))
		return nil, false
	}
	rows := &stream{inner: cached, id: id, limits: rt.limits, end: func(n, bytes int64, err error) {
		rec := new(Record) // OnFinish's argument: the hit's own
		*rec = baseRecord(id, req, start, c.env.Now(), dec.Trace)
		rec.Group, rec.CacheHit = dec.Group, true
		rec.ExecMs = millis(rec.End.Sub(start))
		rec.Rows, rec.Bytes = n, bytes
		rec.Status = statusOf(err)
		fillError(rec, err)
		c.report(rt, rec)
	}}
	c.open.Open(&rows.closed, "rows", id, req.SQL)
	c.metrics.cacheHits.WithLabelValues(dec.Group).Inc()
	c.countPath(PathCache)
	return rows, true
}

// engineError gives an engine's error a SQLSTATE unless it already has one or is a
// cancellation, which the frontend reports as such. A failure to reach the engine (whose
// message names its address, user or database) reaches the client as CodeEngineUnavailable
// only; its detail goes to the log.
func (a *Admission) engineError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return a.bareCancellation(err)
	}
	var h *query.Hidden
	switch {
	case errors.As(err, &h) && h.Public.Code == query.CodeEngineUnavailable:
		h = query.EngineUnavailable(a.Cluster, h.Detail) // named by its cluster
	case h == nil && unreachable(err):
		h = query.EngineUnavailable(a.Cluster, err)
	}
	if h != nil {
		a.core.env.Logger().Warn("query failed; the client sees only its code", "cluster", a.Cluster, "query", a.QueryID, "err", h)
		return h
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return err
	}
	return &query.Error{Code: query.CodeEngine, Message: err.Error()}
}

// bareCancellation is a cancellation without the text an engine may have wrapped around it
// (a driver's message can name the engine's address), which frontends would relay; the
// text goes to the log.
func (a *Admission) bareCancellation(err error) error {
	bare := context.Canceled
	if errors.Is(err, context.DeadlineExceeded) {
		bare = context.DeadlineExceeded
	}
	if err != bare {
		a.core.env.Logger().Info("query cancelled; the client sees only the cancellation", "cluster", a.Cluster, "query", a.QueryID, "err", redact.Error(err))
	}
	return bare
}

// unreachable reports whether err is a failure to reach a peer over the network: its message
// carries the peer's address (and a URL's path), which clients must not see.
func unreachable(err error) bool {
	var (
		ne  net.Error
		ue  *url.Error
		ce  *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
	)
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &rhe)
}

// timeoutContext is the engine-side context of one query under the group's query timeout,
// and its cancel; run tells the timeout from a client's cancel. Without a timeout it is ctx
// itself and cancel is nil: a caller that needs a cancel of its own makes one.
func (c *Core) timeoutContext(ctx context.Context, timeout time.Duration) (qctx context.Context, cancel context.CancelFunc, run runContext) {
	if timeout <= 0 {
		return ctx, nil, runContext{}
	}
	qctx, cancel = c.env.WithTimeout(ctx, timeout)
	return qctx, cancel, runContext{parent: ctx, ctx: qctx, timeout: timeout}
}

// runContext is the engine-side context of one query, to tell a query timeout from a client
// cancellation.
type runContext struct {
	parent, ctx context.Context
	timeout     time.Duration
}

// explain turns the cancellation caused by the group's query timeout into an error saying so.
func (r runContext) explain(err error) error {
	if err != nil && r.timeout > 0 && r.parent.Err() == nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return &query.Error{Code: query.CodeQueryTimeout, TimedOut: true, Message: fmt.Sprintf("query exceeded the group's query timeout of %s", r.timeout)}
	}
	return err
}

// explain replaces the cancellation a lost slot caused with an error that says so.
func (a *Admission) explain(err error) error {
	if err != nil && a.slot.Lost() {
		return errLeaseLost(a.slot, a.Cluster, false)
	}
	return err
}

// errLeaseLost is the error of a query, or of a session's transaction (tx), stopped because
// slot's capacity lease on cluster was lost. It names the lease by its ID
// ("<cluster>#<generation>", which the control plane's lease list and log show; never its
// holder's session) so that an operator can find it.
func errLeaseLost(slot Slot, cluster string, tx bool) error {
	lease := "its capacity lease"
	if l, ok := slot.(interface{ Lease() capacity.Lease }); ok && l.Lease().ID != "" {
		lease += " " + l.Lease().ID
	}
	what, advice := "query", "it did not take effect; retry it"
	if tx {
		what, advice = "transaction", "roll it back and retry it"
	}
	return &query.Error{Code: query.CodeLeaseLost, Retryable: true,
		Message: fmt.Sprintf("%s cancelled: %s on cluster %s was lost (not renewed within its term, or taken back by the control plane); %s",
			what, lease, cluster, advice)}
}

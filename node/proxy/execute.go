package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
)

// Execute routes req, answers from the result cache when it can, otherwise admits it (slot,
// queue) and runs it on the chosen cluster's engine. The returned Rows release the slot and
// report the query when closed; the caller must Close them.
func (c *Core) Execute(ctx context.Context, req *query.Request) (query.Rows, error) {
	start := c.env.Now()
	rt, err := c.enter()
	if err != nil {
		return nil, err
	}
	id := c.newID()
	dec := rt.Route(req)
	g, err := c.checkRouted(req, rt, dec)
	if err != nil {
		return nil, c.refuse(rt, id, req, start, dec, err)
	}
	key, cacheable := "", false
	if g.cache.TTL > 0 {
		key, cacheable = cacheKey(req, g.name, g.fingerprint)
	}
	if cacheable {
		if rows, ok := c.fromCache(rt, key, id, req, dec, start); ok {
			return rows, nil
		}
		c.metrics.cacheMisses.WithLabelValues(dec.Group).Inc()
		if rows, err, forwarded := c.remote(ctx, rt, g, req, key); forwarded {
			return rows, err
		}
	}
	adm, err := c.admit(ctx, rt, req, id, dec, g, start)
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
	// on the group's query timeout, or when the guard reports the slot's lease lost.
	qctx, cancel := c.env.WithCancel(ctx)
	if g.timeout > 0 {
		cancel()
		qctx, cancel = c.env.WithTimeout(ctx, g.timeout)
	}
	adm.slot.OnLost(cancel)
	if adm.slot.Lost() {
		cancel() // the lease is gone already: nothing may start under it
	}
	run := runContext{parent: ctx, ctx: qctx, timeout: g.timeout}
	rows, err := adm.Engine.Execute(adm.Tagged(qctx), req)
	if err != nil {
		cancel()
		err = adm.explain(run.explain(adm.engineError(err)))
		adm.Finish(0, 0, err)
		return nil, err
	}
	tr := &trackedRows{inner: rows, adm: adm, cancel: cancel, run: run}
	c.open.Open(&tr.closed, "rows", id, req.SQL)
	if cacheable && rows.Schema() != nil {
		tr.fill = newCacheFill(rows.Schema(), g.cache.MaxEntryBytes)
		tr.cacheKey, tr.cacheSpec = key, g.cache
	}
	return tr, nil
}

// fromCache serves a hit without a slot or an engine.
func (c *Core) fromCache(rt *Runtime, key, id string, req *query.Request, dec Decision, start time.Time) (query.Rows, bool) {
	e, ok := c.cache.get(key, start)
	if !ok {
		return nil, false
	}
	rows, err := openCached(e, rt.limits, id, func(n, bytes int64, err error) {
		rec := baseRecord(id, req, start, c.env.Now(), dec.Trace)
		rec.Group, rec.CacheHit = dec.Group, true
		rec.ExecMs = millis(rec.End.Sub(start))
		rec.Rows, rec.Bytes = n, bytes
		rec.Status = statusOf(err)
		fillError(&rec, err)
		c.report(rt, rec)
	})
	if err != nil {
		c.env.Logger().Error("dropping unreadable cache entry", "group", dec.Group, "err", err)
		return nil, false
	}
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
		return err
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

// runContext is the engine-side context of one query, to tell a query timeout from a client
// cancellation.
type runContext struct {
	parent, ctx context.Context
	timeout     time.Duration
}

// explain turns the cancellation caused by the group's query timeout into an error saying so.
func (r runContext) explain(err error) error {
	if err != nil && r.timeout > 0 && r.parent.Err() == nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return &query.Error{Code: query.CodeQueryTimeout, Message: fmt.Sprintf("query exceeded the group's query timeout of %s", r.timeout)}
	}
	return err
}

// explain replaces the cancellation a lost slot caused with an error that says so.
func (a *Admission) explain(err error) error {
	if err != nil && a.slot.Lost() {
		return &query.Error{Code: query.CodeCapacityTimeout, Retryable: true,
			Message: fmt.Sprintf("query cancelled: its capacity lease on cluster %s was lost", a.Cluster)}
	}
	return err
}

// trackedRows wraps an engine's stream: it counts rows and bytes, tees batches into the cache,
// and on Close releases the slot and reports the query.
type trackedRows struct {
	inner     query.Rows
	adm       *Admission
	cancel    context.CancelFunc // ends the engine ctx (query timeout)
	run       runContext
	fill      *cacheFill
	cacheKey  string
	cacheSpec CacheSpec
	rows      int64
	bytes     int64
	drained   bool
	err       error
	closed    invariants.Once
}

func (r *trackedRows) Schema() *arrow.Schema { return r.inner.Schema() }
func (r *trackedRows) Tag() string           { return r.inner.Tag() }

func (r *trackedRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.closed.Closed() {
		return nil, fmt.Errorf("proxy: Next on closed rows of query %s", r.adm.QueryID)
	}
	if r.drained {
		return nil, io.EOF
	}
	rec, err := r.inner.Next(ctx)
	if err == io.EOF {
		r.drained = true
		return nil, io.EOF
	}
	if err != nil {
		err = r.adm.explain(r.run.explain(r.adm.engineError(err)))
		if r.err == nil {
			r.err = err
		}
		return nil, err
	}
	r.rows += rec.NumRows()
	r.bytes += recordBytes(rec)
	if err := r.adm.Runtime.limits.check(r.rows, r.bytes); err != nil {
		if r.err == nil {
			r.err = err
		}
		return nil, err
	}
	if r.fill != nil {
		r.fill.write(rec)
	}
	return rec, nil
}

func (r *trackedRows) Close() error {
	if !r.closed.Close("rows", r.adm.QueryID) {
		return nil
	}
	cerr := r.inner.Close()
	r.cancel()
	outcome := r.err
	// A statement without a result set (INSERT, SET) is complete once Execute returned; a
	// result set closed before its end was abandoned by the client.
	if outcome == nil && !r.drained && r.inner.Schema() != nil {
		outcome = errClosedEarly
	}
	if r.fill != nil {
		if data := r.fill.finish(); outcome == nil && data != nil {
			c := r.adm.core
			c.cache.put(&cacheEntry{
				key: r.cacheKey, group: r.adm.Group, data: data, tag: r.inner.Tag(),
				expires: c.env.Now().Add(r.cacheSpec.TTL),
			}, r.cacheSpec.MaxBytes)
			c.metrics.cacheWrites.WithLabelValues(r.adm.Group).Inc()
		}
	}
	r.adm.Finish(r.rows, r.bytes, outcome)
	return cerr
}

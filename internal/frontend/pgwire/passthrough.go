package pgwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"errors"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// Passthrough: a statement routed to a PostgreSQL engine is relayed as the engine's
// own wire messages (RowDescription, DataRow, CommandComplete), never decoded into Arrow. The
// proxy core still routes, checks, queues, takes the slot and reports the query
// (proxy.Core.AdmitPassthrough); it says when a query needs its values (result cache,
// settings.passthrough: false, an engine of another protocol) and the statement then takes
// the Arrow path. So do BEGIN (it pins the session on the Arrow path; the transaction's later
// statements are relayed on the pinned connection, proxy.Relay) and statements this
// frontend answers itself (client-protocol SETs).
//
// Session state: like the Arrow path, a statement outside a transaction runs on whichever
// pooled engine connection is free, and a transaction's pinned connection goes back to the
// pool at its end. So a session-level SET / SET SESSION (SET TIME ZONE, SET ROLE, SET SCHEMA,
// SET SESSION AUTHORIZATION, SET SESSION CHARACTERISTICS, ...) is refused with 0A000, outside
// and inside a transaction (session.go, CheckSessionState): it would not carry to the client's
// next statement and would change the connection for other clients. SET LOCAL, SET
// TRANSACTION and SET CONSTRAINTS inside a transaction run, as do RESET and SET x TO DEFAULT
// (they restore the default every pooled connection has); client-protocol settings
// (application_name, client_encoding, ...) are answered here. Not detected: state changed
// through a function, such as SELECT set_config('x', 'y', false), a temporary table, a
// session advisory lock, LISTEN or a WITH HOLD cursor; they stay on the pooled connection. Use
// SET LOCAL inside a transaction, or set it on the engine's role/database. Likewise several
// statements in one simple Query run as separate transactions, not one implicit transaction.
//
// Engine side (pgengine's relay): a simple-protocol statement is sent as a Query, an extended
// one as Parse, Bind, Describe, Execute, Sync in one write, on whichever relay connection is
// free. Prepared statements: the client's Parse is kept here, and a named statement is also
// kept prepared per engine connection (under a name of the connection's own), so its later
// executions on that connection skip the Parse (pgbench -M prepared); an unnamed one is parsed
// each time, as PostgreSQL does. An error PostgreSQL raises while planning (at Bind) reaches
// the client after this frontend's own BindComplete.

// canRelay says whether the frontend can relay from e: a PostgreSQL engine (engine.PGRelayer).
func canRelay(e query.Engine) bool {
	_, ok := e.(engine.PGRelayer)
	return ok
}

// rawMessage is a backend message already encoded (the engine's own), sent as it is.
type rawMessage []byte

func (m rawMessage) Decode([]byte) error               { return errors.New("pgwire: rawMessage is send-only") }
func (m rawMessage) Encode(dst []byte) ([]byte, error) { return append(dst, m...), nil }
func (m rawMessage) Backend()                          {}

// passthroughBackend is a backend that can admit a query for a relay (proxy.Core).
type passthroughBackend interface {
	AdmitPassthrough(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool) (*proxy.Admission, bool, error)
}

// sessionRelayer is a pinned session of the core that can relay (proxy's coreSession).
type sessionRelayer interface {
	BeginRelay(ctx context.Context, q *query.Request) (*proxy.Relay, bool, error)
}

// relay is the engine side of a relayed portal.
type relay struct {
	run    *proxy.Relay // the core's side: limits, and the one Finish
	res    engine.PGResult
	cancel context.CancelFunc // the portal's: stops the engine early
	rows   int64
	bytes  int64
	err    error
	done   bool
	// suspended is set once an Execute stopped at its row limit (PortalSuspended).
	suspended bool
}

// rawParams keeps a Bind's parameters as the client sent them, for a relay. pgproto3 reuses
// its receive buffer, so the values are copied.
type rawParams struct {
	values  [][]byte
	formats []int16
}

func copyRawParams(m *pgproto3.Bind) rawParams {
	total := 0
	for _, v := range m.Parameters {
		total += len(v)
	}
	buf := make([]byte, 0, total)
	values := make([][]byte, len(m.Parameters))
	for i, v := range m.Parameters {
		if v == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, v...)
		values[i] = buf[start:len(buf):len(buf)]
	}
	return rawParams{values: values, formats: append([]int16(nil), m.ParameterFormatCodes...)}
}

// relayable reports whether p may try the passthrough path at all.
func (c *conn) relayable(p *portal) bool {
	if c.session == nil && beginsTransaction(p.stmt.sql) {
		return false // BEGIN opens the pinned session on the Arrow path first
	}
	n := len(p.raw.values)
	if len(p.stmt.paramOIDs) > n {
		return false // more declared types than values: let the Arrow path report it
	}
	k := len(p.raw.formats)
	return k <= 1 || k == n
}

// startRelay asks the core to relay p and starts it on the engine. started is false when the
// statement must take the Arrow path.
func (c *conn) startRelay(p *portal) (started bool, err error) {
	if !c.relayable(p) {
		return false, nil
	}
	p.ctx, p.cancel = context.WithCancel(c.ctx)
	req := c.request(p.stmt.sql, nil)
	c.beginRun(p.cancel)
	defer c.endRun()
	run, ok, err := c.beginRelay(p, req)
	if err != nil {
		return true, c.runError(err)
	}
	if !ok {
		p.cancel()
		p.ctx, p.cancel = nil, nil
		return false, nil
	}
	raw, ok := run.Engine.(engine.PGRelayer)
	if !ok {
		return true, run.Finish(0, 0, fmt.Errorf("pgwire: %T admitted for passthrough cannot relay", run.Engine))
	}
	// req.SQL, not p.stmt.sql: the core's Check may have translated it (translation scripts).
	return true, c.runRelay(p, raw, req.SQL, &relay{run: run, cancel: p.cancel})
}

// beginRelay asks the core for a relay of req: a statement of the pinned transaction on its
// engine connection, or else a query of its own. ok is false when it must take the Arrow path.
func (c *conn) beginRelay(p *portal, req *query.Request) (run *proxy.Relay, ok bool, err error) {
	if c.session != nil {
		sr, ok := c.session.(sessionRelayer)
		if !ok {
			return nil, false, nil
		}
		return sr.BeginRelay(p.ctx, req)
	}
	pb, ok := c.srv.backend.(passthroughBackend)
	if !ok {
		return nil, false, nil
	}
	adm, ok, err := pb.AdmitPassthrough(p.ctx, req, canRelay)
	if err != nil || !ok {
		return nil, ok, err
	}
	return adm.Relay(p.ctx, p.cancel), true, nil
}

// runRelay starts sql (p's statement) on raw and, when it returns no rows, concludes it.
func (c *conn) runRelay(p *portal, raw engine.PGRelayer, sql string, r *relay) error {
	st := engine.PGStatement{SQL: sql, Simple: p.simple, Prepared: p.stmt.named, Params: p.raw.values, ParamOIDs: paramOIDsFor(p), ParamFormats: p.raw.formats, ResultFormats: p.formats}
	res, err := raw.RelayPG(r.run.Ctx, st)
	if err != nil {
		return c.runError(r.run.Finish(0, 0, err))
	}
	r.res = res
	p.relay = r
	if res.Description() == nil {
		// No result set (or an error before one): finish now, the tag or error is final.
		c.concludeRelay(p)
		if r.err != nil {
			return c.runError(r.err)
		}
	}
	return nil
}

// paramOIDsFor pads the client's declared parameter types to the number of values (0 means
// "infer", as in PostgreSQL).
func paramOIDsFor(p *portal) []uint32 {
	oids, n := p.stmt.paramOIDs, len(p.raw.values)
	if len(oids) == 0 || len(oids) == n {
		return oids
	}
	out := make([]uint32, n)
	copy(out, oids)
	return out
}

// concludeRelay reads the engine's result to its end (or its error), frees the connection and
// reports the query.
func (c *conn) concludeRelay(p *portal) {
	r := p.relay
	if r.done {
		return
	}
	r.done = true
	tag, err := r.res.Close()
	if err != nil && r.err == nil {
		if cerr := r.run.Ctx.Err(); cerr != nil {
			err = cerr // the client's cancel, the query timeout or a lost lease: Finish says which
		}
		r.err = err
	}
	if r.err == nil {
		p.tag = tag
	}
	r.err = r.run.Finish(r.rows, r.bytes, r.err)
}

// relayDescription is the engine's RowDescription as it is, or nil when there are no rows.
func relayDescription(r *relay) pgproto3.BackendMessage {
	if d := r.res.Description(); d != nil {
		return rawMessage(d)
	}
	return nil
}

// executeRelay sends up to rowsMax rows (0 = all) of a relayed portal, then CommandComplete,
// or PortalSuspended when rows remain.
func (c *conn) executeRelay(p *portal, rowsMax int64) error {
	r := p.relay
	if p.done {
		return nil
	}
	c.beginRun(p.cancel)
	defer c.endRun()
	var n int64
	for !r.done {
		if rowsMax > 0 && n == rowsMax {
			r.suspended = true
			c.be.Send(&pgproto3.PortalSuspended{})
			return nil
		}
		row, ok := r.res.NextRow()
		if !ok {
			break
		}
		c.be.Send(rawMessage(row)) // Send copies it at once
		size := len(row) - 7       // the values and their lengths, as the Arrow path counts them
		r.rows++
		r.bytes += int64(size)
		n++
		if err := r.run.CheckLimits(r.rows, r.bytes); err != nil {
			r.err = err
			r.cancel() // stop the engine rather than read the rest of the result
			c.concludeRelay(p)
			return err
		}
		if c.unflushed += size; c.unflushed > flushBytesMax {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	c.concludeRelay(p)
	if r.err != nil {
		return c.runError(r.err)
	}
	p.done = true
	tag := p.tag
	if r.suspended && strings.HasPrefix(tag, "SELECT ") {
		// PostgreSQL counts the rows of the Execute that completed a resumed portal.
		tag = "SELECT " + strconv.FormatInt(n, 10)
	}
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	return nil
}

// abandonRelay ends a relayed portal the client closed before its end: the statement is
// cancelled on the engine rather than read to its end.
func (c *conn) abandonRelay(p *portal) {
	r := p.relay
	if r.done {
		return
	}
	r.cancel()
	r.err = context.Canceled
	c.concludeRelay(p)
}

package mysqlwire

import (
	"context"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// Passthrough (issue 10): a COM_QUERY routed to a MySQL-protocol engine (MySQL, MariaDB,
// StarRocks) is answered with the engine's own packets: its column definitions and its
// text-protocol rows go to the client as they are, never decoded into Arrow. The proxy core
// still routes, checks, queues, takes the slot and reports the query (rows and relayed bytes)
// through proxy.Core.AdmitPassthrough, which also says when a query needs its values (result
// cache, settings.passthrough: false, an engine this frontend cannot relay from); the query
// then takes the Arrow path. So do prepared statements (COM_STMT_EXECUTE: binary rows), the
// statements of a pinned transaction (BEGIN … COMMIT run on the Arrow path's pinned engine
// session), and the statements this frontend answers itself (SET, USE, KILL, @@variables).
//
// The EOF packets around the rows are this frontend's own (its status flags are the client
// session's, as on the Arrow path); a statement without rows gets an OK with the engine's
// affected rows, insert id and warnings.

// RawEngine is an engine whose COM_QUERY results this frontend can relay (mysqlengine.Engine).
type RawEngine interface {
	QueryRaw(ctx context.Context, q *query.Request) (*mysqlengine.RawQuery, error)
}

// passthroughBackend is a backend that can admit a query for a relay (proxy.Core).
type passthroughBackend interface {
	AdmitPassthrough(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool) (*proxy.Admission, bool, error)
}

func canRelay(e query.Engine) bool {
	_, ok := e.(RawEngine)
	return ok
}

// cancelCheckRows is how often (in rows) a relay looks at its context while it streams: a
// cancelled statement stops relaying rows even before the engine's kill takes effect.
const cancelCheckRows = 256

// relay answers req through the passthrough path. ok is false when req must take the Arrow
// path; otherwise the response (or the error) has been handled and res, err are go-mysql's.
func (h *session) relay(ctx context.Context, cancel context.CancelFunc, req *query.Request) (res *mysql.Result, err error, ok bool) {
	pb, isCore := h.s.backend.(passthroughBackend)
	if !isCore {
		return nil, nil, false
	}
	adm, ok, err := pb.AdmitPassthrough(ctx, req, canRelay)
	if err != nil {
		h.writeError(err)
		return written(), nil, true
	}
	if !ok {
		return nil, nil, false
	}
	raw, isRaw := adm.Engine.(RawEngine)
	if !isRaw {
		err := fmt.Errorf("mysqlwire: cluster %s admitted for passthrough cannot relay", adm.Cluster)
		adm.Finish(0, 0, err)
		h.writeError(err)
		return written(), nil, true
	}
	rctx, rcancel := adm.RunContext(ctx, cancel)
	// req.SQL as the core left it: its Check may have translated the statement.
	q, err := raw.QueryRaw(rctx, req)
	if err != nil {
		err = adm.Explain(contextOr(rctx, err))
		rcancel()
		adm.Finish(0, 0, err)
		h.writeError(err)
		return written(), nil, true
	}
	if q.Columns() == nil {
		r := *q.Result()
		err := q.Close()
		if err == nil {
			err = rctx.Err() // cancelled while it ran: the statement may not have finished
		}
		err = adm.Explain(err)
		rcancel()
		adm.Finish(0, 0, err)
		if err != nil {
			h.writeError(err)
			return written(), nil, true
		}
		return &mysql.Result{AffectedRows: r.AffectedRows, InsertId: r.InsertId, Warnings: r.Warnings}, nil, true
	}
	rows, bytes, werr, err := h.relayRows(rctx, adm, q)
	err = adm.Explain(err)
	rcancel()
	adm.Finish(rows, bytes, err)
	if werr != nil {
		return nil, werr, true // the client connection is broken; go-mysql closes it
	}
	if err != nil {
		if werr := h.writeErrorPacket(toMySQLError(err)); werr != nil {
			return nil, werr, true
		}
		return written(), nil, true
	}
	return written(), h.writeEOF(), true
}

// relayRows writes the column count, the engine's column definitions, an EOF and the engine's
// rows, and closes q. err is the statement's (the engine's, a cancel, a guardrail); werr a
// failed write to the client.
func (h *session) relayRows(ctx context.Context, adm *proxy.Admission, q *mysqlengine.RawQuery) (rows, bytes int64, werr, err error) {
	cols := q.Columns()
	buf := make([]byte, 4, 1024)
	if werr = h.conn.WritePacket(mysql.AppendLengthEncodedInteger(buf, uint64(len(cols)))); werr != nil {
		return 0, 0, werr, q.Close()
	}
	for _, c := range cols {
		if werr = h.conn.WritePacket(c); werr != nil {
			return 0, 0, werr, q.Close()
		}
	}
	if werr = h.writeEOF(); werr != nil {
		return 0, 0, werr, q.Close()
	}
	for {
		row, more := q.NextRow(buf)
		if !more {
			break
		}
		buf = row[:4] // keep the grown buffer for the next row
		if werr = h.conn.WritePacket(row); werr != nil {
			return rows, bytes, werr, q.Close()
		}
		rows++
		bytes += int64(len(row) - 4)
		if err = adm.CheckLimits(rows, bytes); err != nil {
			q.Close() // stops reading: the connection is closed rather than drained
			return rows, bytes, nil, err
		}
		if rows%cancelCheckRows == 0 && ctx.Err() != nil {
			q.Close()
			return rows, bytes, nil, ctx.Err()
		}
	}
	err = q.Close()
	if err == nil {
		err = ctx.Err() // a KILL QUERY the engine answered with a normal end (SLEEP returns 1)
	}
	return rows, bytes, nil, err
}

// contextOr prefers ctx's error (the client's cancel, the query timeout, a lost lease: the
// core's Explain tells which) to the engine error it caused.
func contextOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

package mysqlwire

import (
	"context"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// Passthrough: a COM_QUERY routed to a MySQL-protocol engine (MySQL, MariaDB,
// StarRocks) is answered with the engine's own packets: its column definitions and its
// text-protocol rows go to the client as they are, never decoded into Arrow (written in runs,
// as many rows as one read from the engine brought, only their sequence numbers changed;
// mysqlengine's packets.go reads them). The proxy core still routes, checks, queues, takes the
// slot and reports the query (rows and relayed bytes): proxy.Core.AdmitPassthrough admits it,
// or says when it needs its values (result cache, settings.passthrough: false, an engine this
// frontend cannot relay from) and so takes the Arrow path; the admission's proxy.Relay runs it
// and is finished in one place (runRelay). A prepared statement's execution is relayed the same way: it runs
// as a prepared statement on the engine connection, with the client's parameters as they came,
// and its binary rows go back as the engine sent them (stmt.go). The statements of a pinned
// transaction take the Arrow path (BEGIN … COMMIT run on the pinned engine session), and the
// statements this frontend answers itself (SET, USE, KILL, @@variables, SHOW WARNINGS) none.
//
// The EOF packets around the rows are this frontend's own (its status flags are the client
// session's, as on the Arrow path); a statement without rows gets an OK with the engine's
// affected rows, insert id, warnings and info (go-mysql writes the info only to a client with
// CLIENT_SESSION_TRACK: mysql2, which reads an UPDATE's changedRows there).

// RawEngine is an engine whose COM_QUERY results this frontend can relay (mysqlengine.Engine).
type RawEngine interface {
	QueryRaw(ctx context.Context, q *query.Request) (*mysqlengine.RawQuery, error)
	ExecuteRaw(ctx context.Context, q *query.Request, p mysqlengine.StmtParams) (*mysqlengine.RawQuery, error)
}

// passthroughBackend is a backend that can admit a query for a relay (proxy.Core).
type passthroughBackend interface {
	AdmitPassthrough(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool) (*proxy.Admission, bool, error)
	AdmitPassthroughInto(ctx context.Context, req *query.Request, canRelay func(query.Engine) bool, into *proxy.Admission) (*proxy.Admission, bool, error)
}

// relayed is what relay hands go-mysql for a response it wrote itself (see written); go-mysql
// only reads it, so one value serves every query.
var relayed = written()

func canRelay(e query.Engine) bool {
	_, ok := e.(RawEngine)
	return ok
}

// cancelCheckRows is how often (in rows) a relay looks at its context while it streams: a
// cancelled statement stops relaying rows even before the engine's kill takes effect.
const cancelCheckRows = 256

// relay answers req through the passthrough path. ok is false when req must take the Arrow
// path; otherwise the response (or the error) has been handled and res, err are go-mysql's.
func (h *session) relay(ctx context.Context, cancel context.CancelFunc, req *query.Request, bin *binParams) (res *mysql.Result, err error, ok bool) {
	pb, isCore := h.s.backend.(passthroughBackend)
	if !isCore {
		return nil, nil, false
	}
	var adm *proxy.Admission
	switch {
	case h.refused != nil: // by the core, on the event loop (loop.go)
		err, h.refused = h.refused, nil
	case h.admitted != nil: // admitted on the event loop, for this goroutine to run
		adm, req, ok = h.admitted, h.admittedReq, true
		h.admitted, h.admittedReq = nil, nil
	default:
		adm, ok, err = pb.AdmitPassthrough(ctx, req, canRelay)
	}
	if err != nil {
		h.writeError(err)
		return relayed, nil, true
	}
	if !ok {
		return nil, nil, false
	}
	res, err = h.runRelay(adm.Relay(ctx, cancel), req, bin)
	return res, err, true
}

// runRelay runs an admitted statement on its engine and answers the client; run is finished
// here, once, whatever happens. res, err are go-mysql's.
func (h *session) runRelay(run *proxy.Relay, req *query.Request, bin *binParams) (*mysql.Result, error) {
	raw, isRaw := run.Engine.(RawEngine)
	if !isRaw {
		h.writeError(run.Finish(0, 0, fmt.Errorf("mysqlwire: %T admitted for passthrough cannot relay", run.Engine)))
		return relayed, nil
	}
	// req.SQL as the core left it: its Check may have translated the statement.
	var q *mysqlengine.RawQuery
	var err error
	if bin != nil {
		q, err = raw.ExecuteRaw(run.Ctx, req, bin.raw)
	} else {
		q, err = raw.QueryRaw(run.Ctx, req)
	}
	if err != nil {
		h.writeError(run.Finish(0, 0, contextOr(run.Ctx, err)))
		return relayed, nil
	}
	var rows, bytes int64
	if name, ok := q.LocalFile(); ok {
		if werr, err := h.relayLocalFile(run, q, name, &bytes); werr != nil || err != nil {
			return h.endRelay(run, q, rows, bytes, werr, err)
		}
	}
	for {
		if q.Columns() != nil {
			werr, err := h.relayRows(run, q, &rows, &bytes)
			if werr != nil || err != nil || !q.More() {
				return h.endRelay(run, q, rows, bytes, werr, err)
			}
		} else if !q.More() {
			return h.endRelay(run, q, rows, bytes, nil, nil)
		}
		if werr, err := h.moreResults(q); werr != nil || err != nil {
			return h.endRelay(run, q, rows, bytes, werr, err)
		}
	}
}

// endRelay ends a relayed statement after its last result's rows, or at its last result's OK
// (it returns that OK, for go-mysql to write): closes q, reports the statement (err is its
// own, werr a failed write to the client) and writes the end of the rows or the error.
func (h *session) endRelay(run *proxy.Relay, q *mysqlengine.RawQuery, rows, bytes int64, werr, err error) (*mysql.Result, error) {
	hadRows, r := q.Columns() != nil, *q.Result()
	if cerr := q.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = run.Ctx.Err() // cancelled while it ran (a KILL QUERY the engine answered with a normal end: SLEEP returns 1)
	}
	if werr != nil {
		err = context.Canceled // the client went: its statement is cancelled, as pgwire reports it
	}
	h.noteWarnings(q.Warnings())
	err = run.Finish(rows, bytes, err)
	switch {
	case werr != nil:
		return nil, werr // the client connection is broken; go-mysql closes it
	case err != nil && hadRows:
		if werr := h.writeErrorPacket(toMySQLError(err)); werr != nil {
			return nil, werr
		}
		return relayed, nil
	case err != nil:
		h.writeError(err)
		return relayed, nil
	case !hadRows:
		return engineOK(&r), nil
	}
	h.warnings, h.stmtStatus = r.Warnings, r.Status&mysqlengine.StatementStatus
	defer func() { h.stmtStatus = 0 }()
	return relayed, h.writeEOF()
}

// engineOK is the OK packet a client gets for an engine's OK: its counts, warnings, info, and
// the status flags that tell of the statement rather than of the session (an index not used).
func engineOK(r *mysql.Result) *mysql.Result {
	return &mysql.Result{AffectedRows: r.AffectedRows, InsertId: r.InsertId, Warnings: r.Warnings, StatusMessage: r.StatusMessage,
		Status: r.Status & mysqlengine.StatementStatus}
}

// moreResults writes the end of a result that more results follow (a CALL's result set, or an
// OK before its last), marked so (SERVER_MORE_RESULTS_EXISTS), and reads the next one's head.
func (h *session) moreResults(q *mysqlengine.RawQuery) (werr, err error) {
	werr = h.writeMore(func() error {
		r := q.Result()
		if q.Columns() == nil {
			return h.conn.WriteValue(engineOK(r))
		}
		h.warnings, h.stmtStatus = r.Warnings, r.Status&mysqlengine.StatementStatus
		defer func() { h.stmtStatus = 0 }()
		return h.writeEOF()
	})
	if werr != nil {
		return werr, nil
	}
	return nil, q.NextResult()
}

// writeRelayedHead writes a relayed result's column count, definitions and EOF.
func (h *session) writeRelayedHead(q *mysqlengine.RawQuery) error {
	head := q.Head()
	if err := h.writeRelayed(head, renumber(head, h.conn.Sequence)); err != nil {
		return err
	}
	return h.writeEOF()
}

// relayRows writes the engine's column count and definitions, an EOF and the engine's rows,
// counting them in rows and bytes, up to the packet that ends them (not written). err is the
// statement's (a cancel, a guardrail); werr a failed write to the client. The engine's packets
// are written on as they came, whole runs of them at once, only their sequence numbers changed
// to the client's.
func (h *session) relayRows(run *proxy.Relay, q *mysqlengine.RawQuery, rows, bytes *int64) (werr, err error) {
	if werr = h.writeRelayedHead(q); werr != nil {
		return werr, nil
	}
	for {
		chunk, more := q.NextRows()
		if !more {
			return nil, nil // the end, or an error Close reports
		}
		if werr, err = h.relayChunk(run, chunk, rows, bytes); werr != nil || err != nil {
			return werr, err
		}
	}
}

// relayChunk counts, checks and writes a run of row packets. A row that fails a check (a
// guardrail's limit; every cancelCheckRows rows, ctx) is the last one written.
func (h *session) relayChunk(run *proxy.Relay, chunk []byte, rows, bytes *int64) (werr, err error) {
	seq := h.conn.Sequence
	at := 0
	for at < len(chunk) {
		n := packetLen(chunk[at:])
		chunk[at+3] = seq
		seq++
		at += 4 + n
		*bytes += int64(n)
		if n == maxPayload {
			continue // the row goes on in the next packet
		}
		*rows++
		if err = run.CheckLimits(*rows, *bytes); err == nil && *rows%cancelCheckRows == 0 {
			err = run.Ctx.Err()
		}
		if err != nil {
			break
		}
	}
	return h.writeRelayed(chunk[:at], seq), err
}

// maxPayload is the largest payload of one packet: a packet this long is continued by the next.
const maxPayload = 1<<24 - 1

func packetLen(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }

// renumber gives packets (whole, headers included) the sequence numbers from seq on and
// returns the next one.
func renumber(packets []byte, seq uint8) uint8 {
	for at := 0; at < len(packets); at += 4 + packetLen(packets[at:]) {
		packets[at+3] = seq
		seq++
	}
	return seq
}

// writeRelayed writes packets already framed for the client, through the connection
// go-mysql writes on (TLS when the client asked for it), and continues its sequence at next.
// go-mysql's server never negotiates compression, so framed packets go out as they are.
func (h *session) writeRelayed(packets []byte, next uint8) error {
	h.conn.Sequence = next
	_, err := h.conn.Conn.Conn.Write(packets)
	return err
}

// contextOr prefers ctx's error (the client's cancel, the query timeout, a lost lease: the
// core's Explain tells which) to the engine error it caused.
func contextOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// relayLocalFile hands the client's file on to the engine for a relayed LOAD DATA LOCAL
// INFILE (the engine asked for name): the request goes to the client as the engine wrote it,
// the client's packets to the engine as they come, up to the client's empty packet, which
// ends the file; then the engine's answer is read (q.Result, or Close's error). The file's
// bytes count as the statement's relayed bytes, under its guardrails: a file past them, or a
// cancelled statement, is read to its end from the client and dropped, and the statement is
// aborted on the engine (q closed before EndFile), so nothing of it is loaded. werr is a
// failed read or write of the client's connection.
func (h *session) relayLocalFile(run *proxy.Relay, q *mysqlengine.RawQuery, name []byte, bytes *int64) (werr, err error) {
	h.out.stopWatch() // the session reads the client now: no hangup watch may read it too
	if werr = h.conn.WritePacket(append([]byte{0, 0, 0, 0, mysql.LocalInFile_HEADER}, name...)); werr != nil {
		return werr, nil
	}
	for {
		data, rerr := h.conn.ReadPacket()
		if rerr != nil {
			return rerr, nil
		}
		if len(data) == 0 {
			break
		}
		if err != nil {
			continue // refused: the rest is read and dropped
		}
		*bytes += int64(len(data))
		if err = run.CheckLimits(0, *bytes); err == nil {
			err = run.Ctx.Err()
		}
		if err == nil {
			err = q.SendFile(data)
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, q.EndFile()
}

package pgengine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// The relay (passthrough): engine.PGRelayer on connections of this engine's own, kept apart
// from the pgx pool. pgconn opens them (TLS, authentication) and then leaves them alone: a
// statement is written as wire messages and the answer is read message by message, the
// RowDescription and DataRows handed to the frontend whole, never decoded.

const (
	rawReadBufferBytes = 32 << 10
	// rawMessageBytesMax bounds one engine message (PostgreSQL's own limit is 1 GiB).
	rawMessageBytesMax = 1 << 30
	// rawCheckIdleAfter is how long a connection may sit idle before it is checked for a
	// message the server sent meanwhile (a shutdown notice): cheaper than a round trip.
	rawCheckIdleAfter = time.Second
	// rawCancelGrace is how long a cancelled statement may take to answer before its
	// connection is abandoned.
	rawCancelGrace  = 10 * time.Second
	rawConnsDefault = 16
	// rawStatementsMax bounds the statements one connection keeps prepared for clients'
	// named statements; past it, executions run unnamed (parsed each time).
	rawStatementsMax = 256
)

var errRawProtocol = errors.New("pgengine: relay: unexpected message from the server")

// rawPool keeps the relay's idle connections (last in, first out) and bounds how many are open.
type rawPool struct {
	cfg   *pgconn.Config
	slots chan struct{} // one token per open or opening connection
	mu    sync.Mutex
	idle  []*rawConn
	shut  bool
}

func newRawPool(cfg *pgconn.Config, maxConns int) *rawPool {
	if maxConns <= 0 {
		maxConns = rawConnsDefault
	}
	// A plain TCP connection can be lent to a frontend's event loop (engine.PGWireSocket).
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if tc, ok := nc.(*net.TCPConn); ok && err == nil {
			return relayloop.NewConn(tc), nil
		}
		return nc, err
	}
	return &rawPool{cfg: cfg, slots: make(chan struct{}, maxConns)}
}

// get takes an idle connection, preferring one that last served owner (it need not be reset),
// or opens one.
func (p *rawPool) get(ctx context.Context, owner uint64) (*rawConn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			<-p.slots
			return nil, errors.New("pgengine: the engine is closed")
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		i := n - 1
		for j := i; j >= 0 && owner != 0; j-- {
			if p.idle[j].owner == owner {
				i = j
				break
			}
		}
		c := p.idle[i]
		p.idle = append(p.idle[:i], p.idle[i+1:]...)
		p.mu.Unlock()
		if time.Since(c.idleSince) < rawCheckIdleAfter || c.quiet() {
			return c, nil
		}
		c.close()
	}
	pc, err := pgconn.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.slots
		return nil, wrapErr(err)
	}
	return &rawConn{pg: pc, buf: make([]byte, rawReadBufferBytes), txStatus: 'I', stmts: map[string]string{}}, nil
}

// getReady takes, without waiting, an idle connection that can serve owner at once: it last
// served owner (no reset, no setup), carries tag (no retag) and is known quiet. nil when there
// is none, or no connection may be taken now.
func (p *rawPool) getReady(owner uint64, tag string) *rawConn {
	select {
	case p.slots <- struct{}{}:
	default:
		return nil
	}
	p.mu.Lock()
	for j := len(p.idle) - 1; j >= 0 && !p.shut; j-- {
		c := p.idle[j]
		if c.owner != owner || !c.used || !c.tagged || c.tag != tag {
			continue
		}
		if time.Since(c.idleSince) >= rawCheckIdleAfter && !c.quiet() {
			break // the goroutine's get closes it and opens another
		}
		p.idle = append(p.idle[:j], p.idle[j+1:]...)
		p.mu.Unlock()
		return c
	}
	p.mu.Unlock()
	<-p.slots
	return nil
}

// put takes c back, or closes it when it cannot serve another statement.
func (p *rawPool) put(c *rawConn) {
	if c.broken || c.txStatus != 'I' || c.awaitZ != 0 || c.unsynced {
		c.close()
		<-p.slots
		return
	}
	c.idleSince = time.Now()
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		c.close()
		<-p.slots
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
	<-p.slots
}

func (p *rawPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.shut = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// rawConn is one relay connection: pgconn's, read and written directly while idle for pgconn.
type rawConn struct {
	pg        *pgconn.PgConn
	buf       []byte // buf[r:w] is read and not yet consumed
	r, w      int
	out       []byte
	txStatus  byte
	broken    bool
	idleSince time.Time
	// stmts maps a client statement (its SQL and declared parameter types, built in key) to
	// the name it is prepared under on this connection.
	stmts    map[string]string
	key      []byte
	prepared int // statements named so far: names are never reused
	// owner is the client the connection served last (0: none yet): another client gets it
	// only after a reset (wire.go).
	owner uint64
	used  bool // served a client since it was opened
	// awaitZ counts Syncs and Queries sent whose ReadyForQuery is not read yet; unsynced says
	// extended-protocol messages were sent since the last Sync. Either makes the connection
	// unfit for another client.
	awaitZ   int
	unsynced bool
	rawTag   // the capacity lease tag (tag.go)
}

func (c *rawConn) close() {
	if c.awaitZ > 0 || c.unsynced {
		// Mid-statement: closing the socket alone leaves the backend running until it next
		// talks to us; a cancel request stops it now.
		ctx, cancel := context.WithTimeout(context.Background(), rawCancelGrace)
		_ = c.pg.CancelRequest(ctx)
		cancel()
		c.broken = true
	}
	if c.broken {
		_ = c.pg.Conn().Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.pg.Close(ctx) // sends Terminate
}

// next returns the server's next message, whole; it is valid until the next call.
func (c *rawConn) next() ([]byte, error) {
	need := 5
	for {
		if avail := c.w - c.r; avail >= 5 {
			need = int(binary.BigEndian.Uint32(c.buf[c.r+1:])) + 1
			if need < 5 || need > rawMessageBytesMax {
				return nil, fmt.Errorf("pgengine: relay: message of %d bytes from the server", need)
			}
			if avail >= need {
				msg := c.buf[c.r : c.r+need : c.r+need]
				c.r += need
				return msg, nil
			}
		}
		if err := c.fill(need); err != nil {
			return nil, err
		}
	}
}

// fill reads at least once, making room for a message of need bytes first.
func (c *rawConn) fill(need int) error {
	if c.r == c.w {
		c.r, c.w = 0, 0
	}
	if len(c.buf)-c.r < need {
		if need > len(c.buf) {
			grown := make([]byte, max(need, 2*len(c.buf)))
			c.w = copy(grown, c.buf[c.r:c.w])
			c.buf = grown
		} else {
			c.w = copy(c.buf, c.buf[c.r:c.w])
		}
		c.r = 0
	}
	n, err := c.pg.Conn().Read(c.buf[c.w:])
	c.w += n
	if err != nil && n == 0 {
		return err
	}
	return nil
}

func (c *rawConn) write() error {
	_, err := c.pg.Conn().Write(c.out)
	return err
}

// RelayPG implements engine.PGRelayer: st runs on a relay connection in one round trip.
// Cancelling ctx cancels the statement on the server (a cancel request); that connection is
// then closed rather than reused, so a late cancel can never hit a later statement.
func (e *Engine) RelayPG(ctx context.Context, st engine.PGStatement) (engine.PGResult, error) {
	c, err := e.raw.get(ctx, st.Owner)
	if err != nil {
		return nil, wrapErr(err)
	}
	if err := c.serve(ctx, engine.PGWireOptions{Owner: st.Owner}); err != nil {
		e.raw.put(c)
		return nil, err
	}
	if err := c.retag(ctx, e.raw); err != nil {
		e.raw.put(c)
		return nil, wrapErr(err)
	}
	res := &rawResult{pool: e.raw, c: c}
	res.encode(st)
	if err := c.write(); err != nil {
		c.broken = true
		e.raw.put(c)
		return nil, err
	}
	res.stop = context.AfterFunc(ctx, func() { res.cancelOnServer() })
	res.start()
	return res, nil
}

// rawResult reads one statement's answer on its connection.
type rawResult struct {
	pool *rawPool
	c    *rawConn
	stop func() bool
	desc []byte
	tag  string
	err  error
	// parsedKey is the statement this execution prepares (forgotten if it fails); cached is
	// the name of the one it reuses.
	parsedKey, cached string
	parseComplete     bool
	// rows: DataRows may follow; ended: the rows (or the error) are over, ReadyForQuery is not
	// read yet; closed: the connection is back.
	rows, ended, closed bool
}

func (r *rawResult) encode(st engine.PGStatement) {
	c := r.c
	out := c.out[:0]
	if st.Simple {
		out, _ = (&pgproto3.Query{String: st.SQL}).Encode(out)
		c.out = out
		return
	}
	name, parsed := "", false
	if st.Prepared {
		name, parsed = r.statement(st)
	}
	if !parsed {
		out, _ = (&pgproto3.Parse{Name: name, Query: st.SQL, ParameterOIDs: st.ParamOIDs}).Encode(out)
	}
	out, _ = (&pgproto3.Bind{PreparedStatement: name, ParameterFormatCodes: st.ParamFormats, Parameters: st.Params, ResultFormatCodes: st.ResultFormats}).Encode(out)
	out, _ = (&pgproto3.Describe{ObjectType: 'P'}).Encode(out)
	out, _ = (&pgproto3.Execute{}).Encode(out)
	out, _ = (&pgproto3.Sync{}).Encode(out)
	c.out = out
}

// statement is the name st is prepared under on this connection, and whether it already is.
// A statement not prepared yet gets a name (its Parse goes with this execution) unless the
// connection keeps rawStatementsMax already: then it runs unnamed.
func (r *rawResult) statement(st engine.PGStatement) (name string, parsed bool) {
	c := r.c
	c.key = append(c.key[:0], st.SQL...)
	for _, oid := range st.ParamOIDs {
		c.key = binary.BigEndian.AppendUint32(append(c.key, 0), oid)
	}
	if name, ok := c.stmts[string(c.key)]; ok {
		r.cached = name
		return name, true
	}
	if len(c.stmts) >= rawStatementsMax {
		return "", false
	}
	c.prepared++
	name = "qf_" + strconv.Itoa(c.prepared)
	r.parsedKey = string(c.key)
	c.stmts[r.parsedKey] = name
	return name, false
}

// cancelOnServer runs when the statement's context ends while it runs.
func (r *rawResult) cancelOnServer() {
	ctx, cancel := context.WithTimeout(context.Background(), rawCancelGrace)
	defer cancel()
	_ = r.c.pg.CancelRequest(ctx)
	_ = r.c.pg.Conn().SetReadDeadline(time.Now().Add(rawCancelGrace))
}

// start reads up to the RowDescription, or to the end of a statement without rows.
func (r *rawResult) start() {
	for !r.ended {
		msg, ok := r.message()
		if !ok {
			return
		}
		switch msg[0] {
		case '1':
			r.parseComplete = true
		case '2': // BindComplete
		case 'T':
			r.desc = append([]byte(nil), msg...)
			r.rows = true
			return
		case 'n': // NoData: the CommandComplete follows
		case 'G', 'H', 'W': // CopyInResponse, CopyOutResponse, CopyBothResponse
			r.c.broken = true // mid-COPY: only closing it ends the COPY
			r.fail(&query.Error{Code: sqlstate.FeatureNotSupported, Message: "COPY to or from the client is not supported through the proxy"})
		default:
			r.c.broken = true
			r.fail(errRawProtocol)
		}
	}
}

// message reads the next message, handling what ends the rows (CommandComplete,
// EmptyQueryResponse, ErrorResponse) and what may come at any time (notices, parameter
// status, notifications). ok is false when the caller gets nothing more.
func (r *rawResult) message() ([]byte, bool) {
	for {
		msg, err := r.c.next()
		if err != nil {
			r.c.broken = true
			r.fail(err)
			return nil, false
		}
		switch msg[0] {
		case 'N', 'S', 'A':
			continue
		case 'C':
			r.tag = string(commandTagOf(msg))
			r.ended = true
			return nil, false
		case 'I':
			r.ended = true
			return nil, false
		case 'E':
			var er pgproto3.ErrorResponse
			if err := er.Decode(msg[5:]); err != nil {
				r.c.broken = true
				r.fail(err)
				return nil, false
			}
			r.fail(pgconn.ErrorResponseToPgError(&er))
			return nil, false
		case 'Z':
			r.c.broken = true // ReadyForQuery before the statement ended
			r.fail(errRawProtocol)
			return nil, false
		}
		return msg, true
	}
}

func (r *rawResult) fail(err error) {
	if r.err == nil {
		r.err = err
		r.forget(err)
	}
	r.ended = true
}

// forget undoes what an execution that failed may have left wrong in the statement map: a
// Parse that failed never prepared its statement (one that succeeded stays, even when the
// execution failed later); a statement that vanished (DEALLOCATE) or
// whose result type changed (DDL) makes the connection's other statements suspect too, so the
// connection is dropped.
func (r *rawResult) forget(err error) {
	if r.parsedKey != "" && !r.parseComplete {
		delete(r.c.stmts, r.parsedKey)
	}
	var pe *pgconn.PgError
	if r.cached != "" && errors.As(err, &pe) && (pe.Code == sqlstate.InvalidSQLStatementName || pe.Code == sqlstate.FeatureNotSupported) {
		r.c.broken = true
	}
}

func commandTagOf(msg []byte) []byte {
	body := msg[5:]
	if n := len(body); n > 0 && body[n-1] == 0 {
		body = body[:n-1]
	}
	return body
}

// Description implements engine.PGResult.
func (r *rawResult) Description() []byte { return r.desc }

// NextRow implements engine.PGResult.
func (r *rawResult) NextRow() ([]byte, bool) {
	if !r.rows || r.ended {
		return nil, false
	}
	msg, ok := r.message()
	if !ok {
		return nil, false
	}
	if msg[0] != 'D' {
		r.c.broken = true
		r.fail(errRawProtocol)
		return nil, false
	}
	return msg, true
}

// Close implements engine.PGResult: the rest is read to ReadyForQuery (the caller cancels the
// statement's context first to cut a long result short).
func (r *rawResult) Close() (string, error) {
	if r.closed {
		return r.tag, wrapErr(r.err)
	}
	r.closed = true
	for !r.ended {
		r.message() // rows the client did not want
	}
	for !r.c.broken {
		msg, err := r.c.next()
		if err != nil {
			r.c.broken = true
			r.fail(err)
			break
		}
		if msg[0] == 'Z' {
			if len(msg) == 6 {
				r.c.txStatus = msg[5]
			}
			break
		}
		if msg[0] == 'G' || msg[0] == 'H' || msg[0] == 'W' {
			r.c.broken = true // a COPY after the statement: it waits for data that never comes
			break
		}
		if msg[0] == 'E' && r.err == nil { // an error after the rows (at Sync)
			var er pgproto3.ErrorResponse
			if er.Decode(msg[5:]) == nil {
				r.err = pgconn.ErrorResponseToPgError(&er)
				r.forget(r.err)
			}
		}
	}
	if !r.stop() {
		r.c.broken = true // a cancel request was sent or is being sent: never reuse
	}
	r.pool.put(r.c)
	return r.tag, wrapErr(r.err)
}

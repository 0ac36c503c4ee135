package pgengine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// The wire (engine.PGWire): one relay connection handed to the PostgreSQL frontend, which
// writes the client's messages to it and reads the server's answers itself. A connection goes
// from client to client only through a reset: the reset query (DISCARD ALL by default: temp
// tables, prepared statements, LISTEN, advisory locks, session settings, WITH HOLD cursors),
// then DEALLOCATE ALL, so nothing one client left on it is seen by the next.

var (
	_ engine.PGWireOpener = (*Engine)(nil)
	_ engine.PGWireSocket = (*wireConn)(nil)
)

// resetQueryDefault is what a connection runs before it serves another client.
const resetQueryDefault = "DISCARD ALL"

// OpenPGWire implements engine.PGWireOpener.
func (e *Engine) OpenPGWire(ctx context.Context, o engine.PGWireOptions) (engine.PGWire, error) {
	if o.Owner == 0 {
		panic("pgengine: OpenPGWire without an owner")
	}
	spare := o.Spare
	if o.Kept != nil {
		if k, ok := o.Kept.(*wireConn); ok && k.pool == e.raw && o.NoWait {
			if w := e.raw.takeKept(k, o.Owner, e.raw.wantTag(ctx, o), o.Setup); w != nil {
				return w, nil
			}
		}
		spare = keptAside(spare, o.Kept)
	}
	if o.NoWait {
		c := e.raw.getReady(o.Owner, e.raw.wantTag(ctx, o), o.Setup)
		if c == nil {
			return nil, engine.ErrWouldWait
		}
		return e.wire(spare, c), nil // serve has nothing to do
	}
	c, err := e.raw.get(ctx, o.Owner)
	if err != nil {
		return nil, wrapErr(err)
	}
	if err := c.serve(ctx, e.raw, o, e.raw.wantTag(ctx, o)); err != nil {
		e.raw.put(c)
		return nil, wrapErr(err)
	}
	return e.wire(spare, c), nil
}

// wire is the wire on c: in spare's memory when spare is a wire of this engine's, closed and
// never cancelled (a cancelled one's request may still be on its way; PGWireOptions.Spare says
// nothing else reaches it), else new.
func (e *Engine) wire(spare engine.PGWire, c *rawConn) *wireConn {
	if w, ok := spare.(*wireConn); ok && w.pool == e.raw {
		w.mu.Lock()
		reuse := w.closed && !w.cancelled
		w.mu.Unlock()
		if reuse {
			*w = wireConn{pool: e.raw, c: c}
			return w
		}
	}
	return &wireConn{pool: e.raw, c: c}
}

// serve readies c for o.Owner, in one round trip when there is anything to do: a connection
// that served another client is reset; the owner's setup runs when the connection starts
// serving it, or when it changed since (a SET TIME ZONE the engine reported on another
// connection: the setup is all overwrites); and the connection is tagged (tag.go). A failed
// reset discards c.
func (c *rawConn) serve(ctx context.Context, p *rawPool, o engine.PGWireOptions, tag string) error {
	reset := c.used && c.owner != o.Owner
	if !reset && c.used && c.setup == o.Setup && c.tagged && c.tag == tag {
		return nil
	}
	var sqls []string
	if reset {
		q := o.ResetQuery
		if q == "" {
			q = resetQueryDefault
		}
		sqls = append(sqls, q, "DEALLOCATE ALL")
		c.forgetStatements()
		c.setup, c.tagged = "", false // RESET ALL put the settings and application_name back
	}
	c.owner, c.used = o.Owner, true
	setupAt := -1
	if o.Setup != c.setup && o.Setup != "" {
		setupAt = len(sqls)
		sqls = append(sqls, o.Setup)
	}
	backstopAt := -1
	if _, set := p.cfg.RuntimeParams["client_connection_check_interval"]; !c.tagged && !set {
		backstopAt = len(sqls)
		sqls = append(sqls, backstopSQL)
	}
	tagAt := -1
	if !c.tagged || c.tag != tag {
		tagAt = len(sqls)
		sqls = append(sqls, setTagSQL(tag))
	}
	errs, err := c.simpleEach(ctx, sqls...)
	if err != nil {
		return err
	}
	for i, err := range errs {
		var qe *query.Error
		switch {
		case err == nil:
		case reset && i < 2:
			c.broken = true
			return fmt.Errorf("pgengine: the reset query failed on the engine: %w", err)
		case i == setupAt && errors.As(err, &qe):
			return &query.Error{Code: qe.Code, Message: "startup parameter or option refused by the engine: " + qe.Message}
		case i == backstopAt && errors.As(err, &qe) && qe.Code == codeUndefinedObject: // before PostgreSQL 14
		case i == tagAt:
			return fmt.Errorf("pgengine: tagging the session: %w", err)
		default:
			return err
		}
	}
	if setupAt >= 0 {
		c.setup = o.Setup
	}
	c.tag, c.tagged = tag, true
	return nil
}

// simple runs each of sqls as a simple Query (in one write) on the idle connection and reads
// their answers through ReadyForQuery; the first error the server reports is returned as a
// *query.Error. Everything else the server says is dropped.
func (c *rawConn) simple(ctx context.Context, sqls ...string) error {
	errs, err := c.simpleEach(ctx, sqls...)
	for _, e := range errs {
		if err == nil {
			err = e
		}
	}
	return err
}

// simpleEach is simple with the error of each of sqls (nil: it succeeded); err is a failure
// of the connection, after which c is broken.
func (c *rawConn) simpleEach(ctx context.Context, sqls ...string) (errs []error, err error) {
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Now()) })
	defer stop()
	c.out = c.out[:0]
	for _, sql := range sqls {
		c.out, _ = (&pgproto3.Query{String: sql}).Encode(c.out)
	}
	err = c.write()
	c.written()
	if err != nil {
		c.broken = true
		return nil, err
	}
	errs = make([]error, len(sqls))
	for i := 0; i < len(sqls); {
		msg, err := c.next()
		if err != nil {
			c.broken = true
			return nil, err
		}
		switch msg[0] {
		case 'E':
			var er pgproto3.ErrorResponse
			if err := er.Decode(msg[5:]); err != nil {
				c.broken = true
				return nil, err
			}
			errs[i] = &query.Error{Code: er.Code, Message: er.Message}
		case 'G', 'H', 'W':
			c.broken = true // a COPY: nothing here can feed or drain it
			return nil, errRawProtocol
		case 'Z':
			c.txStatus = msg[len(msg)-1]
			if c.txStatus != 'I' {
				c.broken = true
				return nil, errors.New("pgengine: the query left a transaction open")
			}
			i++
		}
	}
	return errs, nil
}

// wireConn is engine.PGWire on a relay connection.
type wireConn struct {
	pool *rawPool
	c    *rawConn
	// mu orders Cancel and Close: a cancel request goes out only while the connection is this
	// wire's, and a connection cancelled is closed, never given back: the request may still be
	// on its way, and would cancel the next client's statement.
	mu                sync.Mutex
	cancelled, closed bool
	// keep: its holder keeps the connection past Close (Keep, hold.go): Close leaves it out of
	// the pool.
	keep bool
	// cancelling: a Cancel's sender runs (keepCancelling); it goes on until the statements
	// sent before the last Cancel (cancelUpTo of sent) have answered (readies).
	cancelling bool
	cancelUpTo uint64
	// sent counts the statements sent (a Query, or a Sync ending extended-protocol messages),
	// readies the ReadyForQuery messages read: what answered is known on other goroutines.
	sent, readies atomic.Uint64
}

func (w *wireConn) Send(msg []byte) {
	w.c.out = append(w.c.out, msg...)
	w.Relayed(msg[0])
}

// Relayed implements engine.PGWireSocket: the bookkeeping of a frontend message sent.
func (w *wireConn) Relayed(kind byte) {
	c := w.c
	switch kind {
	case 'S':
		c.awaitZ++
		c.unsynced = false
		w.sent.Add(1)
	case 'Q':
		c.awaitZ++
		w.sent.Add(1)
	case 'd', 'c', 'f', 'H': // COPY data (within a statement already counted), Flush
	default:
		c.unsynced = true
	}
}

func (w *wireConn) Flush() error {
	c := w.c
	if len(c.out) == 0 {
		return nil
	}
	err := c.write()
	c.written()
	if err != nil {
		c.broken = true
	}
	return err
}

func (w *wireConn) Next() ([]byte, error) {
	c := w.c
	msg, err := c.next()
	if err != nil {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() { // a deadline leaves the stream intact
			c.broken = true
		}
		return nil, err
	}
	if msg[0] == 'Z' && len(msg) == 6 {
		w.Ready(msg[5])
	}
	return msg, nil
}

// Ready implements engine.PGWireSocket.
func (w *wireConn) Ready(txStatus byte) {
	w.c.awaitZ--
	w.c.txStatus = txStatus
	w.readies.Add(1)
}

// LendSocket implements engine.PGWireSocket: only a plain TCP connection with nothing read
// ahead or left to write is relayed byte for byte.
func (w *wireConn) LendSocket() (int, bool) {
	c := w.c
	if c.sock == nil || c.r != c.w || len(c.out) != 0 || c.broken {
		return -1, false
	}
	fd, err := c.sock.Lend()
	return fd, err == nil
}

// Unread implements engine.PGWireSocket.
func (w *wireConn) Unread(b []byte) {
	c := w.c
	if len(b) == 0 {
		return
	}
	kept := c.buf[c.r:c.w]
	buf := make([]byte, max(len(c.buf), len(b)+len(kept)))
	n := copy(buf, b)
	n += copy(buf[n:], kept)
	c.buf, c.r, c.w = buf, 0, n
}

func (w *wireConn) SetReadDeadline(t time.Time) error { return w.c.nc.SetReadDeadline(t) }

// Cancel sends a cancel request on a goroutine of its own and does not wait; it may be called
// on another goroutine than the connection's user's. After Close it does nothing: the
// connection may serve another client by then. The request is sent again while a statement
// sent before the Cancel has not answered (keepCancelling).
func (w *wireConn) Cancel() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.cancelled = true
	w.cancelUpTo = w.sent.Load()
	if w.cancelling {
		return // its sender goes on up to the new mark
	}
	w.cancelling = true
	go w.keepCancelling(w.c) // c read now: the goroutine must not follow w.c
}

// keepCancelling sends c's cancel request, and again while a statement sent before the last
// Cancel has not answered (cancelResendFirst later, then twice as long each time up to
// cancelResendMax, for rawCancelGrace at most), until the wire is closed. PostgreSQL drops a
// request that lands while the backend waits for the client's next message: a statement still
// on its way to it, or the next message of an extended-protocol exchange, then runs to its end
// (past the query timeout that cancelled it, or the lost lease). Like the first, a request sent
// again may land after the statement answered, on the client's next one.
func (w *wireConn) keepCancelling(c *rawConn) {
	giveUp := time.Now().Add(rawCancelGrace)
	for pause := cancelResendFirst; ; pause = min(2*pause, cancelResendMax) {
		_ = c.cancel.sendWithinGrace()
		time.Sleep(pause)
		w.mu.Lock()
		done := w.closed || w.readies.Load() >= w.cancelUpTo || time.Now().After(giveUp)
		if done {
			w.cancelling = false
		}
		w.mu.Unlock()
		if done {
			return
		}
	}
}

func (w *wireConn) Discard() { w.c.broken = true }

func (w *wireConn) Statement(key string, create bool) (string, bool) {
	c := w.c
	if name, ok := c.stmts[key]; ok {
		return name, true
	}
	if !create || len(c.stmts) >= rawStatementsMax || c.stmtBytes+len(key) > rawStatementBytesMax {
		return "", false
	}
	c.prepared++
	name := "qf_" + strconv.Itoa(c.prepared)
	c.stmts[key] = name
	c.stmtBytes += len(key)
	return name, false
}

func (w *wireConn) Forget(key string) {
	if _, ok := w.c.stmts[key]; ok {
		delete(w.c.stmts, key)
		w.c.stmtBytes -= len(key)
	}
}

func (w *wireConn) ForgetAll() { w.c.forgetStatements() }

func (c *rawConn) forgetStatements() {
	clear(c.stmts)
	c.stmtBytes = 0
}

// Execute is not how a wire is used: the frontend writes the client's messages itself.
func (w *wireConn) Execute(context.Context, *query.Request) (query.Rows, error) {
	return nil, errors.New("pgengine: a wire connection runs the client's own messages")
}

func (w *wireConn) TxStatus() byte {
	if w.c.broken {
		return 'I'
	}
	return w.c.txStatus
}

// Close returns the connection (rawPool.put): one left mid-statement once its statement is
// cancelled and its answers read; one in a transaction, cancelled by Cancel (its request may
// still be on its way) or broken is closed, which ends whatever its backend was doing.
func (w *wireConn) Close() error {
	w.mu.Lock()
	closed, cancelled, keep := w.closed, w.cancelled, w.keep
	w.closed = true
	w.mu.Unlock()
	if closed || keep {
		return nil // kept: its holder gives it back (GiveBack), or the next wire takes it over
	}
	if cancelled {
		w.c.broken = true
	}
	w.pool.put(w.c)
	return nil
}

package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/proxy"
)

// Forwarding: when the client's statements go to a PostgreSQL engine (and nothing needs their
// values), the client's own messages are written to one engine connection and every message
// the server answers with is relayed as it is: rows, PortalSuspended (Execute with a row
// limit), COPY in both directions, NoticeResponse, ParameterStatus, NotificationResponse.
// The proxy core (proxy.Core.OpenWire) routes the first statement and takes a capacity slot
// with the connection; each Execute and Query is checked and reported on its own.
//
// How long the connection is kept is the group's pool mode (docs/pooling.md): in session mode
// for the client's whole connection; in transaction mode until the server reports the client
// idle (ReadyForQuery 'I'), the engine resetting the connection before another client gets it.
// What cannot outlive a transaction there (LISTEN, WITH HOLD cursors, session SETs) is refused,
// naming session mode.
//
// Statements: the client's are kept here (conn.stmts) and prepared on each engine connection
// under a name of the connection's own, so a statement prepared in one transaction can be used
// in the next one on another connection (the Parse is sent again, its ParseComplete dropped).
// Portals are the engine's, under the client's names.

// rawMessage is a backend message already encoded (the engine's own), sent as it is.
type rawMessage []byte

func (m rawMessage) Decode([]byte) error               { return errors.New("pgwire: rawMessage is send-only") }
func (m rawMessage) Encode(dst []byte) ([]byte, error) { return append(dst, m...), nil }
func (m rawMessage) Backend()                          {}

// sessionRelayer is a wire session of the core that checks and reports each statement
// (proxy's coreSession).
type sessionRelayer interface {
	BeginRelay(ctx context.Context, q *query.Request) (*proxy.Relay, bool, error)
}

// ownerSeq numbers client connections for the engine pool (a reset happens between owners).
var ownerSeq atomic.Uint64

// wireBackend is a backend that opens wire sessions (proxy.Core).
type wireBackend interface {
	OpenWireInto(ctx context.Context, q *query.Request, owner uint64, setup string, spare *proxy.Wire) (*proxy.Wire, bool, error)
}

// wireState is the engine connection a client's messages are forwarded to.
type wireState struct {
	w       *proxy.Wire
	relayer sessionRelayer
	conn    engine.PGWire
	// queue is what the server's answers will complete, in order (push). front is the start
	// of the array it last grew into, where an emptied queue starts again: the statements of a
	// connection, and of the transactions of a client on the event loop (conn.spare), reuse
	// one array.
	queue, front []expect
	// req is the request the wire was opened with (the transaction's first statement): that
	// statement's check and report use it again (beginRun_), rather than another.
	req *query.Request
	// unnamed is the key of the client statement the engine's unnamed statement holds.
	unnamed string
	// portals maps the client's open portals to their statements' SQL (for checks and history);
	// nil until the first Bind (bindPortal), as simple Queries have none.
	portals map[string]string
	// copyBytes counts CopyData sent to the engine since the last write.
	copyBytes int
	// broken: the engine said something out of turn while the client was idle.
	broken bool
	// firstRun is the wire's first statement's run (newRun), in the wire's memory: in
	// transaction pool mode most wires relay one statement. A wire is made over (openWireWith)
	// only once closeWire reported its statements, after which nothing reads their runs.
	firstRun  wireRun
	firstUsed bool
	// cancel is cancelOf.Cancel, made once while the engine makes each transaction's
	// connection in the last one's memory (a method value is an allocation).
	cancel   func()
	cancelOf engine.PGWire
}

// expect is one client message whose answer the server has not completed yet, or an answer
// this frontend gives itself in its turn.
type expect struct {
	kind    byte // the frontend message: 'P', 'B', 'D', 'E', 'C', 'S' (Sync) or 'Q'
	swallow bool // a Parse sent on the client's behalf: its ParseComplete is not the client's
	synth   byte // an answer of this frontend's own ('1' ParseComplete, '3' CloseComplete)
	run     *wireRun
	// What a Parse prepares, forgotten when it fails: a statement of the engine connection's
	// (by key), or its unnamed statement; and the client's statement stmt, by its name.
	key     string
	unnamed bool
	name    string
	stmt    *preparedStmt
}

// wireRun is one checked and reported statement (an Execute or a Query).
type wireRun struct {
	r         *proxy.Relay
	stop      func() bool // the query timeout's AfterFunc; nil without one
	rows      int64
	bytes     int64
	err       error // the first error (the engine's or a limit's)
	limit     error // set when the result passed a guardrail: the rest is dropped
	limitSent bool
	closed    bool
}

// wantsWire reports whether msg needs the engine and may open a wire session, and with which
// statement (for routing).
func (c *conn) wantsWire(msg pgproto3.FrontendMessage) (string, bool) {
	if c.session != nil {
		return "", false
	}
	if _, ok := c.srv.backend.(wireBackend); !ok {
		return "", false
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		return m.String, strings.TrimSpace(m.String) != ""
	case *pgproto3.Parse:
		return m.Query, true
	case *pgproto3.Bind:
		st, ok := c.stmts[m.PreparedStatement]
		return stmtSQL(st), ok
	case *pgproto3.Describe:
		st, ok := c.stmts[m.Name]
		return stmtSQL(st), ok && m.ObjectType == 'S'
	}
	return "", false
}

// Prepares between transactions: a message batch that executes nothing (Parse, Describe and
// Close of statements, Flush, up to its Sync: pgx's first use of a statement) is not a running
// query, and opens no wire, which would take a slot (a worker's lease) and a place in the queue
// (docs/capacity.md): a prepare under a lease of its own made its execution queue again, behind
// the queries that came after it. The core routes and checks the statement and opens an engine
// connection without a slot (proxy.Core.OpenPrepareWire); the batch is forwarded to it as it is
// (PostgreSQL's own answers, with the client's startup settings applied), and the connection
// goes back at the batch's end. The statement is prepared again where it runs, as ensure does
// for a statement of an earlier transaction. A batch not all read yet is waited for, holding
// nothing (prepareBatch): the client has asked for no answer until it sends a Sync or a Flush.

// preparesOnly reports whether msg, a transaction's first message, may start a batch that
// executes nothing: a Parse (but one of a statement that changes session state or deallocates,
// which forwardParse handles) or a Describe of a statement.
func preparesOnly(msg pgproto3.FrontendMessage, sql string) bool {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		return !pausesParse(sql)
	case *pgproto3.Describe:
		return m.ObjectType == 'S'
	}
	return false
}

// prepareBatch reads the client's messages in ahead, up to a Sync: nothing is true when they
// are only Parse, Describe or Close of a statement, and Flush. known is false when ahead ends
// before the batch shows what it is and the client awaits no answer (its last message is not a
// Flush): more of it is on its way.
func prepareBatch(ahead []byte) (nothing, known bool) {
	flushed := false
	for len(ahead) >= 5 {
		n := 1 + int(binary.BigEndian.Uint32(ahead[1:5]))
		if n < 5 {
			return false, true
		}
		if n > len(ahead) {
			break
		}
		flushed = ahead[0] == 'H'
		switch ahead[0] {
		case 'S':
			return true, true
		case 'P', 'H':
		case 'D', 'C':
			if n < 6 || ahead[5] != 'S' {
				return false, true
			}
		default:
			return false, true
		}
		ahead = ahead[n:]
	}
	return false, len(ahead) == 0 && flushed
}

// prepareAheadMax bounds what a prepare batch may send ahead while its Sync is waited for;
// past it, the batch opens a wire with a slot.
const prepareAheadMax = 1 << 20

// executesNothing reports whether the batch a prepare starts executes nothing, reading the
// client's messages until that is known (they stay ahead, for dispatch). A client gone before
// its batch showed what it is executes nothing more: the next receive ends its connection.
func (c *conn) executesNothing() bool {
	for {
		nothing, known := prepareBatch(c.cr.ahead)
		switch {
		case known:
			return nothing
		case c.cr.err != nil:
			return true
		case len(c.cr.ahead) > prepareAheadMax:
			return false
		}
		preparesAwaitingSync.Add(1)
		c.cr.fill(len(c.cr.ahead) + 1)
		preparesAwaitingSync.Add(-1)
	}
}

// preparesAwaitingSync counts prepares waiting for more of their batch, for tests to wait on.
var preparesAwaitingSync atomic.Int64

// prepareWireBackend is a backend that opens an engine connection for a prepare without a
// slot (proxy.Core).
type prepareWireBackend interface {
	OpenPrepareWire(ctx context.Context, q *query.Request, owner uint64, setup string) (*proxy.Wire, bool, error)
}

// openPrepareWire opens a wire for a batch that executes nothing (proxy.Core.OpenPrepareWire):
// the batch is forwarded as any other, and the wire closed at its ReadyForQuery. ok is false
// when the statement takes the frontend's own path, or the backend opens no such wire.
func (c *conn) openPrepareWire(sql string) (ok bool, err error) {
	pb, isPB := c.srv.backend.(prepareWireBackend)
	if !isPB || !c.srv.backend.Ready() {
		return false, nil
	}
	if c.owner == 0 {
		c.owner = ownerSeq.Add(1)
	}
	req := c.wireRequest(sql)
	ctx, cancel := context.WithCancel(c.ctx)
	c.beginRun(cancel)
	w, ok, err := pb.OpenPrepareWire(ctx, req, c.owner, c.setupSQL())
	c.endRun()
	cancel()
	if err != nil || !ok {
		return ok, c.runError(err)
	}
	rel, isRel := w.Session.(sessionRelayer)
	if !isRel {
		_ = w.Session.Close()
		return false, fmt.Errorf("pgwire: the prepare session of cluster %s cannot refuse statements", w.Cluster)
	}
	c.wire = &wireState{w: w, relayer: rel, conn: w.Conn, req: req}
	return true, nil
}

func stmtSQL(st *preparedStmt) string {
	if st == nil {
		return ""
	}
	return st.sql
}

// openWire opens a wire session for sql's route; ok is false when the statement takes the
// frontend's own path.
func (c *conn) openWire(sql string) (ok bool, err error) { return c.openWireWith(sql, false) }

// openWireWith is openWire; with noWait it answers engine.ErrWouldWait, having done nothing,
// where admission would wait (proxy.NoWait).
func (c *conn) openWireWith(sql string, noWait bool) (ok bool, err error) {
	if !c.srv.backend.Ready() {
		return false, nil
	}
	if c.owner == 0 {
		c.owner = ownerSeq.Add(1)
	}
	wb := c.srv.backend.(wireBackend)
	var w, spare *proxy.Wire
	if c.spare != nil { // the last transaction's wire, closed: the core may make the next in it
		spare = c.spare.w
	}
	req := c.wireRequest(sql)
	if noWait {
		// Nothing waits: there is nothing for a CancelRequest to cancel.
		if c.noWaitCtx == nil { // with the owner's affinity, which OpenWire would add each time
			c.noWaitCtx = proxy.NoWait(query.WithAffinity(c.ctx, c.owner))
		}
		c.cancelRequested.Store(false)
		w, ok, err = wb.OpenWireInto(c.noWaitCtx, req, c.owner, c.setupSQL(), spare)
	} else {
		ctx, cancel := context.WithCancel(c.ctx)
		c.beginRun(cancel)
		w, ok, err = wb.OpenWireInto(ctx, req, c.owner, c.setupSQL(), spare)
		c.endRun()
		cancel()
	}
	if err != nil && errors.Is(err, engine.ErrWouldWait) { // errors.Is of nil costs a call
		return false, err
	}
	if err != nil || !ok {
		return ok, c.runError(err)
	}
	rel, isRel := w.Session.(sessionRelayer)
	if !isRel {
		_ = w.Session.Close()
		return false, fmt.Errorf("pgwire: the wire session of cluster %s cannot report statements", w.Cluster)
	}
	conn := w.Conn
	ws := c.spare
	if ws == nil {
		ws = &wireState{}
	}
	c.spare = nil
	ws.forgetPortals()
	cancel := ws.cancel
	if conn != ws.cancelOf {
		cancel = nil
	}
	ws.reopen(w, rel, conn, req, cancel)
	c.wire = ws
	return true, nil
}

// reopen makes ws a new wire's state: what wireState{w: w, relayer: rel, conn: conn, req: req,
// front: ws.front, portals: ws.portals, cancel: cancel, cancelOf: conn} makes, written field by
// field (the literal zeroed and copied the whole struct: ~100 instructions a transaction on
// the event loop). TestWireStateReopenIsTheLiteral holds the two alike, every field included.
func (ws *wireState) reopen(w *proxy.Wire, rel sessionRelayer, conn engine.PGWire, req *query.Request, cancel func()) {
	ws.w, ws.relayer, ws.conn, ws.req = w, rel, conn, req
	ws.queue, ws.unnamed, ws.copyBytes, ws.broken = nil, "", 0, false
	ws.firstRun, ws.firstUsed = wireRun{}, false
	ws.cancel, ws.cancelOf = cancel, conn
}

// forgetPortals forgets the client's portals; clearing an empty map still costs a call, and
// simple Queries open none.
func (ws *wireState) forgetPortals() {
	if len(ws.portals) != 0 {
		clear(ws.portals)
	}
}

// push adds e to what the server's answers will complete.
func (ws *wireState) push(e expect) {
	if len(ws.queue) == 0 {
		ws.queue = ws.front
	}
	ws.queue = append(ws.queue, e)
	if cap(ws.queue) > cap(ws.front) { // grown into a new array, which starts at queue[0]
		ws.front = ws.queue[:0]
	}
}

// closeWire gives the engine connection back (the engine resets it before another client
// gets it; one left mid-statement is cancelled and closed) and frees the slot.
func (c *conn) closeWire() {
	ws := c.wire
	if ws == nil {
		return
	}
	c.wire = nil
	for _, e := range ws.queue {
		if e.run != nil {
			c.finishRun(e.run, errors.New("pgwire: the client connection ended"))
		}
	}
	_ = ws.w.Session.Close()
}

// forward handles one client message while a wire session is open.
func (c *conn) forward(msg pgproto3.FrontendMessage) error {
	ws := c.wire
	var err error
	switch m := msg.(type) {
	case *pgproto3.Query:
		err = c.forwardQuery(m.String)
		defer c.releaseIfIdle(ws)
	case *pgproto3.Parse:
		err = c.forwardParse(m)
	case *pgproto3.Bind:
		err = c.forwardBind(m)
	case *pgproto3.Describe:
		err = c.forwardDescribe(m)
	case *pgproto3.Execute:
		err = c.forwardExecute(m)
	case *pgproto3.Close:
		err = c.forwardClose(m)
	case *pgproto3.Sync:
		c.skipToSync = false
		c.send(msg, expect{kind: 'S'})
		err = c.pump()
		defer c.releaseIfIdle(ws)
	case *pgproto3.Flush:
		c.send(msg, expect{})
		err = c.pump()
	case *pgproto3.Terminate:
		return errTerminate
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		return nil // not in COPY mode: PostgreSQL ignores these too
	default:
		err = &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("pgwire: unexpected %T", msg)}
	}
	return c.forwardFailed(ws, msg, err)
}

// forwardFailed answers an error of forwarding msg (nil: none) on the wire ws.
func (c *conn) forwardFailed(ws *wireState, msg pgproto3.FrontendMessage, err error) error {
	if err == nil {
		return nil
	}
	var ioe *ioError
	if errors.As(err, &ioe) {
		return err
	}
	var we *wireError
	if errors.As(err, &we) {
		return c.engineConnectionLost(ws, we.err)
	}
	// An error of this frontend's own, in the pipeline's order: the server's answers to what
	// came before go first, then the client's messages up to Sync are skipped.
	if derr := c.drain(); derr != nil {
		return derr
	}
	c.sendError(err)
	if _, isQuery := msg.(*pgproto3.Query); isQuery {
		c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
		return c.flush()
	}
	c.skipToSync = true
	return nil
}

// releaseIfIdle gives the engine connection back in transaction mode once nothing is awaited
// from the server and the client is outside a transaction.
func (c *conn) releaseIfIdle(ws *wireState) {
	if c.wire == ws && c.wire != nil && ws.w.PoolMode == proxy.PoolModeTransaction && len(ws.queue) == 0 && c.txStatus == 'I' {
		c.closeWire()
	}
}

// bindPortal records the client's portal name, bound to a statement of sql.
func (ws *wireState) bindPortal(name, sql string) {
	if ws.portals == nil {
		ws.portals = map[string]string{}
	}
	ws.portals[name] = sql
}

// wireError marks a failure to talk to the engine: the wire session is over.
type wireError struct{ err error }

func (e *wireError) Error() string { return "pgwire: engine I/O: " + e.err.Error() }
func (e *wireError) Unwrap() error { return e.err }

// send queues msg for the engine and what its answer completes (kind 0: nothing).
func (c *conn) send(msg pgproto3.FrontendMessage, e expect) {
	ws := c.wire
	c.scratch, _ = msg.Encode(c.scratch[:0])
	ws.conn.Send(c.scratch)
	if e.kind != 0 {
		ws.push(e)
	}
}

// answer gives the client an answer of this frontend's own, after the server's answers to the
// messages before it.
func (c *conn) answer(kind byte) {
	ws := c.wire
	if len(ws.queue) == 0 {
		c.be.Send(rawMessage{kind, 0, 0, 0, 4})
		return
	}
	ws.push(expect{synth: kind})
}

// stmtKey identifies a statement on an engine connection: its SQL and declared types.
func stmtKey(st *preparedStmt) string {
	if st.key == "" {
		b := []byte(st.sql)
		for _, oid := range st.paramOIDs {
			b = binary.BigEndian.AppendUint32(append(b, 0), oid)
		}
		st.key = string(b) + "\x00k"  // never empty
		st.sql = st.key[:len(st.sql)] // one copy of the text held, not two
	}
	return st.key
}

func (c *conn) forwardQuery(sql string) error {
	ws := c.wire
	if c.answerAppName(sql) || c.answerDeallocate(sql) {
		return c.flush()
	}
	if err := c.refuseForMode(sql); err != nil {
		return err
	}
	run, sql, err := c.beginRun_(sql)
	if err != nil {
		return err
	}
	ws.unnamed = "" // a Query destroys the unnamed statement
	c.forgetOnDiscard(sql)
	c.send(&pgproto3.Query{String: sql}, expect{kind: 'Q', run: run})
	return c.pump()
}

func (c *conn) forwardParse(m *pgproto3.Parse) error {
	ws := c.wire
	if err := c.checkNewStatement(m.Name); err != nil {
		return err
	}
	if err := c.checkParse(m); err != nil {
		return err
	}
	if err := c.refuseForMode(m.Query); err != nil {
		return err
	}
	if proxy.MaySeeSessions(m.Query, c.database) {
		// The engine parses the statement before the core checks its Execute: the engine's
		// views of its sessions are narrowed to the client's own here (the core's check leaves
		// the narrowed text as it is).
		sql, err := proxy.HideOtherSessions(m.Query, query.ProtocolPostgres, c.database)
		if err != nil {
			return err
		}
		m.Query = sql
	}
	// Forgotten before st is kept: a DEALLOCATE ALL parsed unnamed (psycopg 3 sends one after a
	// rollback) is itself the unnamed statement its Bind then names.
	c.forgetOnDiscard(m.Query)
	st := &preparedStmt{sql: m.Query, named: m.Name != "", paramOIDs: append([]uint32(nil), m.ParameterOIDs...)}
	if err := c.keepStmt(m.Name, st); err != nil {
		return err
	}
	key := stmtKey(st)
	if !st.named {
		ws.unnamed = key
		c.send(m, expect{kind: 'P', unnamed: true, stmt: st})
		return nil
	}
	name, prepared := ws.conn.Statement(key, true)
	if prepared || name == "" {
		// Already prepared here, or the connection keeps too many: it is parsed unnamed at Bind.
		c.answer('1')
		return nil
	}
	c.send(&pgproto3.Parse{Name: name, Query: m.Query, ParameterOIDs: m.ParameterOIDs}, expect{kind: 'P', key: key, name: m.Name, stmt: st})
	return nil
}

// answerAppName answers a Query that only sets application_name: on the engine it names the
// capacity lease the session runs under, so the client's is kept here (and reported back).
func (c *conn) answerAppName(sql string) bool {
	if !startsWithSetOrReset(sql) || len(SplitStatements(sql)) != 1 {
		return false
	}
	st := parseSet(sql)
	if st.scope != scopeSession || st.name != "application_name" {
		return false
	}
	if err := c.drain(); err != nil {
		return false
	}
	c.answerSetting(st.name, st.value)
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
	return true
}

// answerDeallocate answers "DEALLOCATE [PREPARE] name" for a statement the client prepared at
// protocol level (psycopg 3 evicting one from its cache): it lives here, under another name
// on the engine connection.
func (c *conn) answerDeallocate(sql string) bool {
	if !strings.EqualFold(firstWord(sql), "deallocate") {
		return false
	}
	toks := significantTokens(sql)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) == 3 && strings.EqualFold(toks[1].Text, "prepare") {
		toks = toks[1:]
	}
	if len(toks) != 2 {
		return false
	}
	name := toks[1].Text
	if toks[1].Kind == sqltok.QuotedIdent {
		name = strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
	} else {
		name = strings.ToLower(name)
	}
	if st, ok := c.stmts[name]; !ok || !st.named {
		return false
	}
	if err := c.drain(); err != nil {
		return false
	}
	c.dropStmt(name)
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte("DEALLOCATE")})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
	return true
}

// ensure prepares the client statement st on the engine connection when it is not yet, and
// returns its name there.
func (c *conn) ensure(st *preparedStmt) string {
	ws := c.wire
	key := stmtKey(st)
	if st.named {
		name, prepared := ws.conn.Statement(key, true)
		if prepared {
			return name
		}
		if name != "" {
			c.send(&pgproto3.Parse{Name: name, Query: st.sql, ParameterOIDs: st.paramOIDs}, expect{kind: 'P', key: key, swallow: true})
			return name
		}
	}
	if ws.unnamed != key {
		ws.unnamed = key
		c.send(&pgproto3.Parse{Query: st.sql, ParameterOIDs: st.paramOIDs}, expect{kind: 'P', unnamed: true, swallow: true})
	}
	return ""
}

func (c *conn) forwardBind(m *pgproto3.Bind) error {
	st, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return &query.Error{Code: sqlstate.InvalidSQLStatementName, Message: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
	}
	if _, open := c.wire.portals[m.DestinationPortal]; !open {
		if err := c.checkNewPortal(m.DestinationPortal, len(c.wire.portals)); err != nil {
			return err
		}
	}
	client := m.PreparedStatement
	m.PreparedStatement = c.ensure(st)
	c.send(m, expect{kind: 'B'})
	m.PreparedStatement = client
	c.wire.bindPortal(m.DestinationPortal, st.sql)
	return nil
}

func (c *conn) forwardDescribe(m *pgproto3.Describe) error {
	if m.ObjectType != 'S' {
		c.send(m, expect{kind: 'D'})
		return nil
	}
	st, ok := c.stmts[m.Name]
	if !ok {
		return &query.Error{Code: sqlstate.InvalidSQLStatementName, Message: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
	}
	c.send(&pgproto3.Describe{ObjectType: 'S', Name: c.ensure(st)}, expect{kind: 'D'})
	return nil
}

func (c *conn) forwardExecute(m *pgproto3.Execute) error {
	sql, known := c.wire.portals[m.Portal]
	var run *wireRun
	if known {
		var err error
		if run, _, err = c.beginRun_(sql); err != nil {
			return err
		}
	}
	c.send(m, expect{kind: 'E', run: run})
	return nil
}

func (c *conn) forwardClose(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		// The engine keeps the statement (another client statement may share it); the client's
		// name is gone.
		c.dropStmt(m.Name)
		c.answer('3')
	case 'P':
		delete(c.wire.portals, m.Name)
		c.send(m, expect{kind: 'C'})
	default:
		return &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("invalid Close object type %q", m.ObjectType)}
	}
	return nil
}

// forgetOnDiscard drops the engine connection's statement map when sql deallocates the
// connection's statements (DEALLOCATE, DISCARD).
func (c *conn) forgetOnDiscard(sql string) {
	if w := firstWord(sql); strings.EqualFold(w, "deallocate") || strings.EqualFold(w, "discard") {
		c.wire.conn.ForgetAll()
		c.wire.unnamed = ""
		if toks := significantTokens(sql); len(toks) >= 2 && strings.EqualFold(toks[len(toks)-1].Text, "all") ||
			len(toks) >= 3 && toks[len(toks)-1].Text == ";" && strings.EqualFold(toks[len(toks)-2].Text, "all") {
			c.dropAllStmts() // DEALLOCATE ALL, DISCARD ALL: the client's statements are gone too
		}
	}
}

// beginRun_ checks sql for the session's group and starts its report; the SQL to send may have
// been rewritten by the core's check.
func (c *conn) beginRun_(sql string) (*wireRun, string, error) {
	ws := c.wire
	req := ws.req
	if req == nil || req.SQL != sql {
		req = c.request(sql, nil)
	}
	ws.req = nil // once: the core's check may change what it holds
	r, ok, err := ws.relayer.BeginRelay(c.ctx, req)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, sql, nil
	}
	run := ws.newRun(r)
	if r.Cancellable() {
		// A lost lease: the engine connection's Cancel does not wait, as the core's hook must
		// not.
		if ws.cancel == nil {
			ws.cancel = ws.conn.Cancel
		}
		r.OnCancel(ws.cancel)
	}
	if r.Ctx != c.ctx { // the group's query timeout
		run.stop = context.AfterFunc(r.Ctx, ws.conn.Cancel)
	}
	return run, req.SQL, nil
}

// newRun is the run of the wire's next statement, relayed through r.
func (ws *wireState) newRun(r *proxy.Relay) *wireRun {
	if ws.firstUsed {
		return &wireRun{r: r}
	}
	ws.firstUsed = true
	ws.firstRun = wireRun{r: r}
	return &ws.firstRun
}

// finishRun reports run once, and returns the error the client should see.
func (c *conn) finishRun(run *wireRun, err error) error {
	if run == nil || run.closed {
		return err
	}
	run.closed = true
	if run.stop != nil && !run.stop() {
		c.lateCancel = true
	}
	if run.err == nil {
		run.err = err
	}
	return run.r.Finish(run.rows, run.bytes, run.err)
}

// drain reads the server's answers to everything sent so far.
func (c *conn) drain() error {
	if c.wire == nil || len(c.wire.queue) == 0 {
		return nil
	}
	c.send(&pgproto3.Flush{}, expect{})
	return c.pump()
}

// pump writes what is queued for the engine and relays the server's answers until everything
// sent is answered.
func (c *conn) pump() error {
	ws := c.wire
	if ws.broken {
		ws.conn.Discard()
		return &wireError{errors.New("the engine connection broke while the client was idle")}
	}
	if err := ws.conn.Flush(); err != nil {
		ws.conn.Discard()
		return &wireError{err}
	}
	c.setEngineCancel()
	defer c.endRun()
	watching := false
	_ = ws.conn.SetReadDeadline(time.Now().Add(engineQuietAfter))
	for {
		c.answerSynth()
		if len(ws.queue) == 0 {
			break
		}
		msg, err := ws.conn.Next()
		if err != nil && !watching && isTimeout(err) {
			// A long statement: flush what the client has so far, and watch for it hanging up.
			_ = ws.conn.SetReadDeadline(time.Time{})
			watching = true
			if err := c.flush(); err != nil {
				return err
			}
			c.unwatch = c.watchClient(ws.conn.Cancel)
			defer c.unwatchClient()
			continue
		}
		if err != nil {
			return &wireError{err}
		}
		if err := c.relay(msg); err != nil {
			return err
		}
	}
	if !watching {
		_ = ws.conn.SetReadDeadline(time.Time{})
	}
	return c.flush()
}

// unwatchClient stops the client's watcher, if one runs.
func (c *conn) unwatchClient() {
	if c.unwatch != nil {
		c.unwatch()
		c.unwatch = nil
	}
}

// answerSynth sends the answers of this frontend's own that are next in line.
func (c *conn) answerSynth() {
	ws := c.wire
	for len(ws.queue) > 0 && ws.queue[0].synth != 0 {
		c.be.Send(rawMessage{ws.queue[0].synth, 0, 0, 0, 4})
		ws.queue = ws.queue[1:]
	}
}

// relay handles one message of the server's.
func (c *conn) relay(msg []byte) error {
	ws := c.wire
	head := &ws.queue[0]
	run := head.run
	switch msg[0] {
	case 'D', 'd': // DataRow, CopyData
		if run != nil {
			if run.limit != nil {
				return nil
			}
			run.rows++
			run.bytes += int64(len(msg) - 7)
			if err := run.r.CheckLimits(run.rows, run.bytes); err != nil {
				run.limit, run.err = err, err
				ws.conn.Cancel()
				return nil
			}
		}
		return c.pass(msg)
	case 'G': // CopyInResponse: the client's CopyData go to the engine until CopyDone or CopyFail
		if err := c.pass(msg); err != nil {
			return err
		}
		if err := c.flush(); err != nil {
			return err
		}
		c.unwatchClient() // the client is read here now
		return c.copyIn()
	case 'W': // CopyBothResponse: replication, which needs both directions at once
		ws.conn.Discard()
		return &wireError{errors.New("CopyBoth (replication) is not supported through the proxy")}
	case 'E':
		return c.relayError(msg)
	case 'Z':
		if head.kind != 'S' && head.kind != 'Q' {
			ws.conn.Discard()
			return &wireError{errors.New("ReadyForQuery out of turn")}
		}
		c.txStatus = msg[len(msg)-1]
		c.finishRun(run, nil)
		ws.queue = ws.queue[1:]
		if c.txStatus == 'I' {
			ws.forgetPortals()
		}
		return c.pass(msg)
	case 'N', 'A': // notices and notifications, at any time
		return c.pass(msg)
	case 'S':
		c.noteParameter(msg)
		return c.pass(msg)
	}
	if head.kind == 'Q' {
		if msg[0] == 'C' && run != nil && run.limit != nil {
			c.sendLimit(run)
			return nil
		}
		return c.pass(msg)
	}
	switch {
	case msg[0] == '1' && head.kind == 'P':
		swallow := head.swallow
		ws.queue = ws.queue[1:]
		if swallow {
			return nil
		}
	case msg[0] == '2' && head.kind == 'B', msg[0] == '3' && head.kind == 'C',
		(msg[0] == 'T' || msg[0] == 'n') && head.kind == 'D':
		ws.queue = ws.queue[1:]
	case (msg[0] == 'C' || msg[0] == 'I' || msg[0] == 's') && head.kind == 'E':
		ws.queue = ws.queue[1:]
		c.finishRun(run, nil)
		if run != nil && run.limit != nil {
			c.sendLimit(run)
			c.skipAfterError()
			return nil
		}
	case msg[0] == 't' && head.kind == 'D', msg[0] == 'H', msg[0] == 'c':
	default:
		ws.conn.Discard()
		return &wireError{fmt.Errorf("unexpected message %q from the server (awaiting the answer to %q)", msg[0], head.kind)}
	}
	return c.pass(msg)
}

// engineConnectionLost ends the client whose engine connection ended (err) under its
// statements: FATAL 08006, or the lost lease's error when the lease of the statement it awaits
// was lost, whose fence on the engine ended that connection.
func (c *conn) engineConnectionLost(ws *wireState, err error) error {
	var lost error
	if len(ws.queue) > 0 && ws.queue[0].run != nil {
		lost = ws.queue[0].run.r.LeaseLost()
	}
	var qe *query.Error
	if errors.As(lost, &qe) {
		return c.fatal(qe.Code, qe.Message)
	}
	return c.fatal(sqlstate.ConnectionFailure, fmt.Sprintf("lost the connection to the engine of cluster %s: %v", ws.w.Cluster, err))
}

// relayError passes the server's ErrorResponse on. Outside a simple Query the server now skips
// the client's messages up to Sync, so what they were awaiting is dropped too.
func (c *conn) relayError(msg []byte) error {
	ws := c.wire
	head := ws.queue[0]
	err := errorOf(msg)
	switch run := head.run; {
	case run != nil && run.limit != nil:
		err = run.limit
		c.sendLimit(run)
	case run != nil && !run.closed && (run.r.Cancelled() || run.r.LeaseLost() != nil):
		// Cancelled by the core (the group's query timeout, a lost lease), or ended by the
		// control plane's fence of a lease its term lost before the keeper noticed: say which.
		err = c.finishRun(run, err)
		c.sendError(err)
	default:
		if err := c.pass(msg); err != nil {
			return err
		}
	}
	if head.kind == 'Q' {
		if head.run != nil && head.run.err == nil {
			head.run.err = err
		}
		return nil
	}
	c.parseFailed(head)
	c.finishRun(head.run, err)
	c.skipAfterError()
	return nil
}

// parseFailed forgets what a Parse the engine refused was to prepare: the engine connection's
// statement, and the client's (PostgreSQL has none under its name either).
func (c *conn) parseFailed(e expect) {
	if e.kind != 'P' {
		return
	}
	if e.key != "" {
		c.wire.conn.Forget(e.key)
	}
	if e.unnamed {
		c.wire.unnamed = ""
	}
	if e.stmt != nil && c.stmts[e.name] == e.stmt {
		c.dropStmt(e.name)
	}
}

// skipAfterError drops what the server skips after an error: everything up to the next Sync.
func (c *conn) skipAfterError() {
	ws := c.wire
	i := 0
	for i < len(ws.queue) && ws.queue[i].kind != 'S' {
		c.finishRun(ws.queue[i].run, errors.New("skipped after an earlier error"))
		i++
	}
	ws.queue = ws.queue[i:]
	if len(ws.queue) == 0 {
		c.skipToSync = true // the client's next messages up to Sync are skipped here too
	}
}

func errorOf(msg []byte) error {
	var er pgproto3.ErrorResponse
	if err := er.Decode(msg[5:]); err != nil {
		return err
	}
	return &query.Error{Code: er.Code, Message: er.Message}
}

// sendLimit tells the client, once, that run's result passed a guardrail (its rows were cut
// and the statement cancelled on the engine).
func (c *conn) sendLimit(run *wireRun) {
	if !run.limitSent {
		run.limitSent = true
		c.sendError(run.limit)
	}
}

// pass relays msg to the client as it is.
func (c *conn) pass(msg []byte) error {
	c.be.Send(rawMessage(msg))
	if c.unflushed += len(msg); c.unflushed > flushBytesMax {
		return c.flush()
	}
	return nil
}

// copyIn forwards the client's COPY data to the engine until CopyDone or CopyFail.
func (c *conn) copyIn() error {
	ws := c.wire
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return &ioError{err}
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			c.send(m, expect{})
			if ws.copyBytes += len(m.Data) + 5; ws.copyBytes >= flushBytesMax {
				ws.copyBytes = 0
				if err := ws.conn.Flush(); err != nil {
					return &wireError{err}
				}
			}
		case *pgproto3.CopyDone, *pgproto3.CopyFail:
			c.send(m, expect{})
			ws.copyBytes = 0
			if err := ws.conn.Flush(); err != nil {
				return &wireError{err}
			}
			return nil
		case *pgproto3.Flush, *pgproto3.Sync: // ignored in COPY mode, as by PostgreSQL
		case *pgproto3.Terminate:
			return errTerminate
		default:
			c.send(&pgproto3.CopyFail{Message: fmt.Sprintf("unexpected %T during COPY from stdin", msg)}, expect{})
			if err := ws.conn.Flush(); err != nil {
				return &wireError{err}
			}
			return nil
		}
	}
}

// noteParameter keeps a client-visible setting the server reports (application_name,
// TimeZone, ...) so that the client's next engine connection gets it too.
func (c *conn) noteParameter(msg []byte) {
	var ps pgproto3.ParameterStatus
	if ps.Decode(msg[5:]) != nil || !reportedSettings[strings.ToLower(ps.Name)] {
		return
	}
	if c.startup[ps.Name] != ps.Value {
		for k := range c.startup {
			if k != ps.Name && strings.EqualFold(k, ps.Name) {
				delete(c.startup, k) // the client's startup spelling (timezone): one setting, set once
			}
		}
		c.setStartup(ps.Name, ps.Value)
	}
}

// reportedSettings are the settings PostgreSQL reports to clients that a client may set
// (GUC_REPORT) and that carry from one engine connection to the next.
var reportedSettings = map[string]bool{
	"application_name": true, "client_encoding": true, "datestyle": true, "intervalstyle": true,
	"timezone": true, "standard_conforming_strings": true,
}

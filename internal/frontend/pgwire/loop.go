package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/proxy"
)

// The event loop (internal/relayloop): a client whose statements are forwarded to PostgreSQL
// engine connections (forward.go), both in plain TCP, is relayed in its steady state by the
// server's event loop instead of its goroutine. The loop's thread reads the client's simple
// Query, or its extended-protocol batch (Parse, Bind, Describe, Execute, Close, Flush, Sync),
// writes it to the engine connection as forward.go would (a named statement under the engine
// connection's name for it, parsed there first when it is not yet, relayloop's Replace) and
// writes the engine's answer straight back, keeping the same books as forward.go
// (wireState.queue: which client message each answer completes) and seeing only the messages
// the proxy must see: ReadyForQuery (the statement's end and its report; the transaction's
// end, when transaction pool mode gives the engine connection back), the answers that
// complete a message, ErrorResponse, ParameterStatus and COPY. Rows are counted as they pass. A goroutine per connection instead pays a scheduler park and wake
// on each side of every message.
//
// The statement's check and report (proxy.Relay) run on the loop's thread: neither
// waits. In transaction pool mode the client stays on the loop between transactions: at a
// transaction's end the loop unplugs the engine connection and gives it and the slot back
// (neither waits), and a transaction's first statement is admitted on the loop's thread
// (proxy.Core.OpenWire under proxy.NoWait: routing, a free slot of a guard that answers at
// once or a worker's lease kept idle, the client's own idle engine connection) and its engine
// connection plugged in at once.
// What may wait, or needs more than the loop does, is the goroutine's: the loop holds the
// client's message and wakes it. An admission that would wait (others queued, no free slot,
// a lease to ask for, an engine connection to open, reset or retag): the goroutine admits it
// and plugs the engine connection into the pair. Everything else (statements that may change
// session state, guardrails on rows or bytes, a statement the core rewrote, COPY from the
// client, an error to explain, a Parse forward.go answers itself): the goroutine takes the
// client and the engine connection back, with the bytes read but not relayed and the queue of
// what the engine has yet to answer, and carries on as forward.go does. A client message that
// comes while a Query or Sync awaits its ReadyForQuery waits for it.

// loopMissesMax is how many times in a row a client may leave the loop at once (its next
// message was one the loop does not relay, before any statement) before it is no longer put
// on it: a client whose statements the loop does not relay would pay for the hand-over on
// every statement. A turn on the loop that relays a statement starts the count again: a
// client that sends the odd message the loop does not relay stays on it.
const loopMissesMax = 4

// loopEvent is what the loop tells the connection's goroutine.
type loopEvent struct {
	admit string // a transaction's first statement, held: admit it and plug an engine in
	done  *relayloop.Result
}

// loopRun is the connection's state on the loop while the pair runs; only the loop's thread
// touches it then (the goroutine waits for its events).
type loopRun struct {
	c      *conn
	h      *relayloop.Handle
	events chan loopEvent
	rows   *relayloop.PG // the engine's direction: rows counted, the answers watched
	sock   engine.PGWireSocket
	// rows0, bytes0: the counts when the engine's last watched message passed; the rows
	// counted since belong to the statement the engine answers now (the queue's head).
	rows0, bytes0 int64
	// busy: a Query or Sync was relayed and its ReadyForQuery has not come back.
	busy bool
	// statements is how many statements this turn on the loop relayed; watched how many of
	// the engine's messages it looked at (fromEngine).
	statements, watched int
	// unplugging: the transaction's engine connection leaves once its ReadyForQuery is
	// written; waiting: a client message is held until the statement or that ends.
	unplugging, waiting bool
	// Why the loop handed the client back, for the goroutine: miss (a message the loop does
	// not relay), refused (the core refused the held message), resend (the held Query is to
	// be sent as this SQL by forward.go, with run), run alone (the held Execute is to be sent
	// by forward.go with its report begun). kind is the held message's type.
	miss    bool
	refused error
	resend  string
	run     *wireRun
	kind    byte
	out     []byte // what the loop relays in a client message's stead (Replacing)
	// plain is the text of a simple Query that may hold no session state and is not blank: a
	// Query of the same text but for its numbers (sameDigitShape) is neither, which the loop
	// then need not look for again (pgbench's statement differs only in a number).
	plain []byte
	// shape is the sqltok.Shape of plain's texts, handed on with each (conn.shaped): this
	// loop's comparison is the one the core's checks and the history's redaction rely on.
	shape *sqltok.Shape
	// held is the engine connection kept plugged in between the client's transactions
	// (transaction pool mode, engine.PGWireKeeper): from a transaction's end, when the engine
	// let the client keep it, until the next transaction's admission takes it over (the same
	// wire again: c.wire.conn) or it is given back (unplugged). While no wire is open it is
	// kept idle, and every message of its server's is watched (out of turn: given back).
	held engine.PGWireKeeper
}

// eventLoop is the server's loop, started on first use; nil where there is none.
func (s *Server) eventLoop() *relayloop.Loop { return s.loop.Get() }

// LoopStatements is how many statements the event loop has relayed.
func (s *Server) LoopStatements() int64 { return s.loopStatements.Load() }

// LoopExecutes is how many extended-protocol Executes the event loop has relayed (counted in
// LoopStatements too).
func (s *Server) LoopExecutes() int64 { return s.loopExecutes.Load() }

// LoopPauses is how many times the event loop handed a client back to its goroutine at a
// message it does not relay.
func (s *Server) LoopPauses() int64 { return s.loopPauses.Load() }

// LoopAdmissions is how many transactions the event loop admitted on its own thread.
func (s *Server) LoopAdmissions() int64 { return s.loopAdmissions.Load() }

// loopable reports whether the connection can go on the loop now: the client forwards to
// engine connections, nothing is half-done, and both sockets are plain TCP.
func (c *conn) loopable() bool {
	lc := c.lc
	if lc == nil || c.owner == 0 || c.session != nil || c.skipToSync || c.unwatch != nil ||
		c.loopMisses >= loopMissesMax || !c.batchEnded || c.srv.draining.Load() {
		return false
	}
	if len(c.cr.ahead) > relayloop.BufferBytesDefault || c.cr.err != nil || c.cr.left != 0 {
		return false
	}
	if ws := c.wire; ws != nil {
		if len(ws.queue) != 0 || ws.broken {
			return false
		}
		if _, ok := ws.conn.(engine.PGWireSocket); !ok {
			return false
		}
	} else if !c.mayAdmitAtOnce() {
		// Transaction pool mode: every transaction's admission would be a hand-off from the
		// loop to the goroutine and back, which costs more than the goroutine relay saves
		// (RESULTS.md).
		return false
	} else if c.loopBackoff > 0 {
		c.loopBackoff--
		return false
	}
	return c.srv.eventLoop() != nil
}

// A worker admits on the loop's thread only with an idle lease (and the client's engine
// connection tagged for it): when the loop hands loopHandOffsMax transactions in a row to the
// goroutine for admission (the control plane to ask: at start, or while other workers contend),
// each hand-off costs more than the loop saves, and the client leaves the loop for the next
// loopBackoff messages.
const (
	loopHandOffsMax = 4
	loopBackoff     = 64
)

// mayAdmitAtOnce reports whether the backend can admit a statement without a network round
// trip (proxy.Core.MayAdmitAtOnce), so that the loop's thread can admit a transaction's first
// one; admitsAtOnce, whether it always can (a guard that only counts).
func (c *conn) mayAdmitAtOnce() bool {
	b, ok := c.srv.backend.(interface{ MayAdmitAtOnce() bool })
	return ok && b.MayAdmitAtOnce()
}

func (c *conn) admitsAtOnce() bool {
	b, ok := c.srv.backend.(interface{ AdmitsAtOnce() bool })
	return ok && b.AdmitsAtOnce()
}

// onLoop relays the client on the event loop until the loop hands it back; then the
// connection goes on as before (loop.go's doc). ok is false when it could not start.
func (c *conn) onLoop() (ok bool, err error) {
	l := c.srv.eventLoop()
	lc := c.lc
	lr := &loopRun{c: c, events: make(chan loopEvent, 2),
		rows: &relayloop.PG{Watched: watchedFromEngine, Counted: countedFromEngine}}
	engineFD := -1
	if c.wire != nil {
		lr.sock = c.wire.conn.(engine.PGWireSocket)
		fd, ok := lr.sock.LendSocket()
		if !ok {
			return false, nil
		}
		engineFD = fd
		c.setEngineCancel()
	}
	fd, err := lc.Lend()
	if err != nil {
		return false, nil
	}
	ahead := c.cr.ahead
	c.cr.ahead = nil
	lr.h = l.NewHandle()
	err = lr.h.Start(relayloop.Pair{A: fd, B: engineFD, Ahead: ahead,
		Framing:        [2]relayloop.Framer{allFromClient, lr.rows},
		Watch:          lr.watch,
		Unplugged:      lr.unplugged,
		KeepB:          true, // engine sockets are relayloop.Conns, which release themselves
		StayB:          true, // kept between transactions (keep)
		Done:           func(res relayloop.Result) { lr.events <- loopEvent{done: &res} },
		MessageTimeout: c.srv.opts.Limits.MessageTimeout,    // as the goroutine's clientReader
		WriteTimeout:   c.srv.opts.Limits.WriteStallTimeout, // as the goroutine's writes (BoundWrites)
	})
	if err != nil {
		c.cr.ahead = ahead
		return false, nil
	}
	c.idleMu.Lock()
	c.onloop = lr
	c.idleMu.Unlock()
	res := lr.wait()
	c.idleMu.Lock()
	c.onloop = nil
	c.idleMu.Unlock()
	return true, c.offLoop(lr, res)
}

var (
	allFromClient = func() *relayloop.PG {
		f := &relayloop.PG{}
		for i := range f.Watched {
			f.Watched[i] = true
		}
		return f
	}()
	watchedFromEngine = func() (w [256]bool) {
		// ReadyForQuery, ErrorResponse, ParameterStatus, COPY in and both ways, and what
		// completes a client message (forward.go's relay).
		for _, t := range []byte{'Z', 'E', 'S', 'G', 'W', '1', '2', '3', 'C', 'I', 's', 'n', 't', 'T'} {
			w[t] = true
		}
		return w
	}()
	countedFromEngine = func() (w [256]bool) {
		w['D'], w['d'] = true, true
		return w
	}()
)

// wait admits what the loop holds until the pair stops, and returns how it stopped.
func (lr *loopRun) wait() relayloop.Result {
	for {
		var ev loopEvent
		select {
		case ev = <-lr.events:
		case <-lr.c.ctx.Done():
			lr.h.Stop()
			for ev = <-lr.events; ev.done == nil; ev = <-lr.events {
			}
		}
		if ev.done != nil {
			return *ev.done
		}
		lr.admit(ev.admit)
	}
}

// admit opens a wire for the held message's sql and plugs its engine connection in; when it
// cannot, the loop hands the client back (the message is then answered as dispatch would).
func (lr *loopRun) admit(sql string) {
	c := lr.c
	if lr.kind == 'P' || lr.kind == 'D' {
		// A Parse or a Describe of a statement may start a batch that executes nothing, which
		// takes no slot (preparesOnly): dispatch reads the batch and decides, where it may wait
		// for the slot itself.
		lr.miss = true
		lr.h.Stop()
		return
	}
	ok, err := c.openWire(sql)
	if err != nil || !ok {
		// Refused (answered by offLoop), or the frontend's own path (dispatch runs it).
		lr.refused, lr.miss = err, err == nil
		lr.h.Stop()
		return
	}
	if !c.admitsAtOnce() {
		c.loopHandOffs++
	}
	if c.loopHandOffs >= loopHandOffsMax {
		c.loopHandOffs, c.loopBackoff = 0, loopBackoff
		lr.h.Stop() // the goroutine forwards it on the wire it has now
		return
	}
	sock, isSock := c.wire.conn.(engine.PGWireSocket)
	fd := -1
	if isSock {
		fd, isSock = sock.LendSocket()
	}
	if !isSock {
		lr.miss = true // the goroutine forwards it on the wire it has now
		lr.h.Stop()
		return
	}
	lr.sock = sock
	c.setEngineCancel()
	lr.h.Resume(fd)
}

// admitNow admits the held message (a Query or a Parse) of sql on the loop's thread when that
// needs no waiting, and plugs its engine connection in. Otherwise admitted is false and v says
// what the loop does with the message: Hold it for the goroutine's admit (an admission that
// would wait), or Pause (refused, or the frontend's own path).
func (lr *loopRun) admitNow(sql string) (v relayloop.Verdict, admitted bool) {
	c := lr.c
	ok, err := c.openWireWith(sql, true)
	switch {
	case err != nil && errors.Is(err, engine.ErrWouldWait): // errors.Is of nil costs a call
		if !lr.letGoHeld() { // the goroutine's admission may need it back in the pool
			return relayloop.Pause, false
		}
		lr.events <- loopEvent{admit: sql}
		return relayloop.Hold, false
	case err != nil || !ok:
		lr.refused, lr.miss = err, err == nil
		return relayloop.Pause, false
	}
	sock, isSock := c.wire.conn.(engine.PGWireSocket)
	if lr.held != nil && isSock && any(sock) == any(lr.held) {
		// The kept connection, taken over: plugged in already.
		lr.rows.WatchAll = false
		lr.admitted(sock)
		return relayloop.Relay, true
	}
	fd := -1
	if isSock {
		fd, isSock = sock.LendSocket()
	}
	if !isSock || !lr.letGoHeld() || lr.h.Plug(fd) != nil {
		lr.miss = true // the goroutine forwards it on the wire it has now
		return relayloop.Pause, false
	}
	lr.admitted(sock)
	return relayloop.Relay, true
}

// admitted books the admission of a transaction on the loop's thread, its engine connection
// sock plugged in.
func (lr *loopRun) admitted(sock engine.PGWireSocket) {
	c := lr.c
	lr.sock = sock
	c.setEngineCancel()
	c.srv.loopAdmissions.Add(1)
	c.loopHandOffs = 0
}

// setEngineCancel makes a CancelRequest cancel what runs on the wire's engine connection.
func (c *conn) setEngineCancel() {
	c.runMu.Lock()
	if c.cancelWire == nil {
		c.cancelWire = c.cancelEngine // once per connection: a method value is an allocation
	}
	c.runCancel, c.cancelConn = c.cancelWire, c.wire.conn
	c.runMu.Unlock()
}

// cancelEngine cancels what runs on the engine connection setEngineCancel named (its Cancel
// does not wait); it runs under runMu (cancelRunning).
func (c *conn) cancelEngine() { c.cancelConn.Cancel() }

// watch is the pair's Watch, on the loop's thread.
func (lr *loopRun) watch(d relayloop.Direction, msg []byte) relayloop.Verdict {
	if d == relayloop.AToB {
		return lr.fromClient(msg)
	}
	return lr.fromEngine(msg)
}

func (lr *loopRun) fromClient(msg []byte) relayloop.Verdict {
	c := lr.c
	if lr.busy || lr.unplugging {
		lr.waiting = true // framed again when the statement ends (pipelining)
		return relayloop.Hold
	}
	lr.kind = msg[0]
	if c.skipToSync && msg[0] != 'S' && msg[0] != 'X' {
		return relayloop.Drop // up to Sync after an error, as the engine does (and conn.loop)
	}
	switch msg[0] {
	case 'Q':
		return lr.query(msg)
	case 'P', 'B', 'D', 'E', 'C', 'H', 'S':
		return lr.extended(msg)
	case 'X':
		return relayloop.Pause // Terminate: the goroutine ends the connection
	}
	lr.miss = true
	return relayloop.Pause
}

// query relays a simple Query forward.go would send unchanged.
func (lr *loopRun) query(msg []byte) relayloop.Verdict {
	c := lr.c
	if len(msg) < 6 || len(c.wire.queueOrNil()) != 0 {
		lr.miss = true
		return relayloop.Pause
	}
	text := msg[5 : len(msg)-1]
	sql := c.texts.string(text)
	if !sameDigitShape(text, lr.plain) {
		if mayHoldSessionState(sql) || strings.TrimSpace(sql) == "" {
			return relayloop.Pause // SETs answered here, refused for the pool mode, an empty Query
		}
		if sqltok.FirstKeywordIs(sql, sqltok.Postgres, "deallocate", "discard") {
			return relayloop.Pause // answered here, never remembered: a kin text is neither
		}
		lr.plain = append(lr.plain[:0], text...)
		lr.shape = new(sqltok.Shape)
	}
	c.shaped = sqltok.Shaped(sql, lr.shape) // the core's checks and the history read it
	if c.wire == nil {
		if v, admitted := lr.admitNow(sql); !admitted {
			return v
		}
	}
	run, sent, err := c.beginRun_(sql)
	switch {
	case err != nil:
		lr.refused = err
		return relayloop.Pause
	case sent != sql || run != nil && run.r.CheckLimits(math.MaxInt64/2, math.MaxInt64/2) != nil:
		// Rewritten by the core, or guardrails that need each row: forward.go sends it.
		lr.resend, lr.run = sent, run
		return relayloop.Pause
	}
	c.wire.unnamed = ""
	lr.relayed(expect{kind: 'Q', run: run})
	lr.busy = true
	lr.watchQuery(true)
	return relayloop.Relay
}

// watchQuery makes the engine's direction watch what a simple Query's answer needs (on: the
// wire's queue holds that Query alone until its ReadyForQuery, the loop holding the client's
// next messages meanwhile) or every message an answer may complete (off). fromEngine passes a
// Query's RowDescriptions and CommandCompletes on unread (its rows are counted at its
// ReadyForQuery): two of pgbench -S's four messages an answer the loop need not look at.
func (lr *loopRun) watchQuery(on bool) {
	lr.rows.Watched['T'], lr.rows.Watched['C'] = !on, !on
}

// sameDigitShape reports whether a and b are the same bytes but for the digits of their runs
// of ASCII digits (sqltok.SameButDigits); false when b is empty. Neither mayHoldSessionState,
// a blank text nor the first keyword can tell such texts apart: no word looked for holds a
// digit, no digit is blank, and runs of digits lie between the same other bytes in both, so
// comments, quotes and the first token end alike (a token with a digit is none of the words).
func sameDigitShape(a, b []byte) bool {
	return len(b) != 0 && sqltok.SameButDigits(a, b) // a blank text is never remembered
}

// queueOrNil is ws's queue; nil for no wire.
func (ws *wireState) queueOrNil() []expect {
	if ws == nil {
		return nil
	}
	return ws.queue
}

// relayed books a client message the loop relays: the engine connection's accounting, and
// what its answer completes (kind 0: nothing).
func (lr *loopRun) relayed(e expect) {
	ws := lr.c.wire
	lr.sock.Relayed(lr.kind)
	if e.kind != 0 {
		ws.push(e)
	}
	if e.kind == 'Q' || e.kind == 'E' {
		lr.statements++
		lr.c.srv.loopStatements.Add(1)
	}
}

// extended relays an extended-protocol message as forward.go would send it: named statements
// renamed to the engine connection's names, and a statement the engine connection has not
// prepared yet parsed first (its ParseComplete dropped), as ensure does.
func (lr *loopRun) extended(msg []byte) relayloop.Verdict {
	c := lr.c
	body := msg[5:]
	if c.wire == nil {
		if v, answered := lr.answerAlone(msg[0], body); answered {
			return v
		}
		// A transaction's first message routes it, by its statement's SQL.
		sql, ok := lr.routing(msg[0], body)
		if !ok {
			lr.miss = true
			return relayloop.Pause
		}
		if msg[0] == 'P' && pausesParse(sql) {
			return relayloop.Pause
		}
		if v, admitted := lr.admitNow(sql); !admitted {
			return v
		}
	}
	ws := c.wire
	switch msg[0] {
	case 'P':
		return lr.parse(ws, body)
	case 'B':
		return lr.bind(ws, body)
	case 'D':
		return lr.describe(ws, body)
	case 'E':
		return lr.execute(ws, body)
	case 'C':
		return lr.close(ws, body)
	case 'H':
		lr.relayed(expect{})
	case 'S':
		c.skipToSync = false
		lr.relayed(expect{kind: 'S'})
		lr.busy = true
	}
	return relayloop.Relay
}

// answerAlone answers, between transactions, what needs no engine connection, as dispatch
// does: a Close (pgx closes a statement after an error, and on Deallocate, in a batch of its
// own) forgets the client's statement here, as forwardClose does, and a Sync ends the batch.
// Admitting a transaction for them would take a slot, a worker's lease, only for the engine
// to say CloseComplete. answered is false for any other message, and where the frontend has
// portals of its own (dispatch closes them).
func (lr *loopRun) answerAlone(kind byte, body []byte) (v relayloop.Verdict, answered bool) {
	c := lr.c
	if len(c.portals) != 0 {
		return 0, false
	}
	switch kind {
	case 'C':
		if len(body) < 2 || body[0] != 'P' && body[0] != 'S' {
			return 0, false // dispatch refuses it
		}
		name, _, ok := cstring(body[1:])
		if !ok {
			return 0, false
		}
		if !lr.letGoHeld() {
			return relayloop.Pause, true // the goroutine answers it
		}
		if body[0] == 'S' {
			c.dropStmt(string(name))
		}
		return lr.h.Answering(closeComplete), true // a portal ended with its transaction
	case 'S':
		if !lr.letGoHeld() {
			return relayloop.Pause, true
		}
		c.skipToSync = false
		c.txStatus = 'I'
		return lr.h.Answering(readyForQueryIdle), true
	case 'H':
		return relayloop.Drop, true // every answer is written as it is made
	}
	return 0, false
}

var (
	closeComplete     = []byte{'3', 0, 0, 0, 4}
	readyForQueryIdle = []byte{'Z', 0, 0, 0, 5, 'I'}
)

// routing is the SQL a transaction's first message routes by (wantsWire): a Parse's, or that
// of the client statement a Bind or a Describe names; ok is false for any other message.
func (lr *loopRun) routing(kind byte, body []byte) (sql string, ok bool) {
	stmts := lr.c.stmts
	switch kind {
	case 'P':
		name, sql, _, ok := parseMessage(body)
		if !ok {
			return "", false
		}
		if st := stmts[string(name)]; st != nil && st.sql == string(sql) {
			return st.sql, true // the client's statement again: no copy
		}
		return string(sql), true
	case 'B':
		_, rest, ok := cstring(body)
		name, _, ok2 := cstring(rest)
		st := stmts[string(name)]
		return stmtSQL(st), ok && ok2 && st != nil
	case 'D':
		if len(body) < 2 || body[0] != 'S' {
			return "", false
		}
		name, _, ok := cstring(body[1:])
		st := stmts[string(name)]
		return stmtSQL(st), ok && st != nil
	}
	return "", false
}

// parse relays a Parse as forwardParse sends it: the unnamed statement as it is, a named one
// under the engine connection's name for it. What forwardParse refuses is handed back.
func (lr *loopRun) parse(ws *wireState, body []byte) relayloop.Verdict {
	c := lr.c
	name, sql, oids, ok := parseMessage(body)
	if !ok {
		lr.miss = true
		return relayloop.Pause
	}
	st := c.stmts[string(name)]
	if len(name) == 0 && st != nil && st.sql == string(sql) && sameOIDs(st.paramOIDs, oids) {
		ws.unnamed = stmtKey(st) // the client's last unnamed statement again
		lr.relayed(expect{kind: 'P', unnamed: true, stmt: st})
		return relayloop.Relay
	}
	if len(name) > 0 && (st != nil || len(c.stmts) >= c.srv.opts.StatementsMax) {
		lr.miss = true // forwardParse refuses it
		return relayloop.Pause
	}
	st = &preparedStmt{sql: string(sql), named: len(name) > 0, paramOIDs: make([]uint32, len(oids)/4)}
	if pausesParse(st.sql) {
		return relayloop.Pause
	}
	for i := range st.paramOIDs {
		st.paramOIDs[i] = binary.BigEndian.Uint32(oids[4*i:])
	}
	if c.keepStmt(string(name), st) != nil {
		lr.miss = true // forwardParse refuses it
		return relayloop.Pause
	}
	key := stmtKey(st)
	if !st.named {
		ws.unnamed = key
		lr.relayed(expect{kind: 'P', unnamed: true, stmt: st})
		return relayloop.Relay
	}
	clientName := string(name)
	e := expect{kind: 'P', name: clientName, stmt: st}
	engineName, prepared := ws.conn.Statement(key, true)
	if prepared || engineName == "" {
		// The engine connection has the statement already (a client statement closed and
		// prepared again, as pgx does after an error), or keeps too many: the client's
		// ParseComplete comes from a Parse of the unnamed statement (where forwardParse answers
		// it itself), and its Binds find the statement as ensure does.
		engineName, e.unnamed, ws.unnamed = "", true, key
	} else {
		e.key = key
	}
	lr.out, _ = (&pgproto3.Parse{Name: engineName, Query: st.sql, ParameterOIDs: st.paramOIDs}).Encode(lr.out[:0])
	lr.relayed(e)
	return lr.h.Replacing(lr.out)
}

// ensure is forward.go's ensure on the loop: the name the client statement st has on the
// engine connection, and parsed true when a Parse that prepares it there was put in lr.out
// first (its ParseComplete is dropped).
func (lr *loopRun) ensure(ws *wireState, st *preparedStmt) (name string, parsed bool) {
	lr.out = lr.out[:0]
	key := stmtKey(st)
	if st.named {
		name, prepared := ws.conn.Statement(key, true)
		if prepared {
			return name, false
		}
		if name != "" {
			lr.parseFirst(ws, name, st, expect{kind: 'P', key: key, swallow: true})
			return name, true
		}
	}
	if ws.unnamed != key {
		ws.unnamed = key
		lr.parseFirst(ws, "", st, expect{kind: 'P', unnamed: true, swallow: true})
		return "", true
	}
	return "", false
}

// parseFirst puts in lr.out a Parse of st under name, booked as e.
func (lr *loopRun) parseFirst(ws *wireState, name string, st *preparedStmt, e expect) {
	lr.out, _ = (&pgproto3.Parse{Name: name, Query: st.sql, ParameterOIDs: st.paramOIDs}).Encode(lr.out)
	lr.sock.Relayed('P')
	ws.push(e)
}

// bind relays a Bind of a client statement under its name on the engine connection.
func (lr *loopRun) bind(ws *wireState, body []byte) relayloop.Verdict {
	c := lr.c
	portal, rest, ok := cstring(body)
	name, params, ok2 := cstring(rest)
	st := c.stmts[string(name)]
	if !ok || !ok2 || st == nil {
		lr.miss = true // forwardBind refuses it
		return relayloop.Pause
	}
	if _, open := ws.portals[string(portal)]; !open && len(portal) > 0 && len(ws.portals) >= c.srv.opts.PortalsMax {
		return relayloop.Pause // forwardBind refuses it
	}
	engineName, parsed := lr.ensure(ws, st)
	ws.bindPortal(string(portal), st.sql)
	lr.relayed(expect{kind: 'B'})
	if !parsed && engineName == string(name) {
		return relayloop.Relay
	}
	start := len(lr.out)
	lr.out = append(lr.out, 'B', 0, 0, 0, 0)
	lr.out = append(append(lr.out, portal...), 0)
	lr.out = append(append(lr.out, engineName...), 0)
	lr.out = append(lr.out, params...)
	binary.BigEndian.PutUint32(lr.out[start+1:], uint32(len(lr.out)-start-1))
	return lr.h.Replacing(lr.out)
}

// describe relays a Describe of a portal as it is, and of a client statement under its name on
// the engine connection.
func (lr *loopRun) describe(ws *wireState, body []byte) relayloop.Verdict {
	if len(body) < 2 {
		lr.miss = true
		return relayloop.Pause
	}
	if body[0] != 'S' {
		lr.relayed(expect{kind: 'D'})
		return relayloop.Relay
	}
	name, _, ok := cstring(body[1:])
	st := lr.c.stmts[string(name)]
	if !ok || st == nil {
		lr.miss = true // forwardDescribe refuses it
		return relayloop.Pause
	}
	engineName, parsed := lr.ensure(ws, st)
	lr.relayed(expect{kind: 'D'})
	if !parsed && engineName == string(name) {
		return relayloop.Relay
	}
	lr.out, _ = (&pgproto3.Describe{ObjectType: 'S', Name: engineName}).Encode(lr.out)
	return lr.h.Replacing(lr.out)
}

// execute relays an Execute of a portal this client bound, checked and reported as a statement.
func (lr *loopRun) execute(ws *wireState, body []byte) relayloop.Verdict {
	c := lr.c
	portal, _, ok := cstring(body)
	sql, known := ws.portals[string(portal)]
	if !ok || !known {
		lr.miss = true
		return relayloop.Pause
	}
	run, _, err := c.beginRun_(sql)
	switch {
	case err != nil:
		lr.refused = err
		return relayloop.Pause
	case run != nil && run.r.CheckLimits(math.MaxInt64/2, math.MaxInt64/2) != nil:
		lr.run = run // guardrails that need each row: forward.go sends it
		return relayloop.Pause
	}
	c.srv.loopExecutes.Add(1)
	lr.relayed(expect{kind: 'E', run: run})
	return relayloop.Relay
}

// noStatement is a statement name an engine connection never has (its own are qf_1, qf_2...):
// closing it answers CloseComplete and closes nothing.
const noStatement = "qf_none"

// close relays a Close of a portal as it is. A client statement's Close forgets it here, as
// forwardClose does, and the engine connection keeps the statement (another client statement
// may share it): what the engine is sent is a Close of a statement it does not have, which it
// answers with the CloseComplete the client awaits, in turn.
func (lr *loopRun) close(ws *wireState, body []byte) relayloop.Verdict {
	if len(body) < 2 || body[0] != 'P' && body[0] != 'S' {
		lr.miss = true
		return relayloop.Pause
	}
	name, _, ok := cstring(body[1:])
	if !ok {
		lr.miss = true
		return relayloop.Pause
	}
	lr.relayed(expect{kind: 'C'})
	if body[0] == 'P' {
		delete(ws.portals, string(name))
		return relayloop.Relay
	}
	delete(lr.c.stmts, string(name))
	lr.out, _ = (&pgproto3.Close{ObjectType: 'S', Name: noStatement}).Encode(lr.out[:0])
	return lr.h.Replacing(lr.out)
}

// pausesParse reports whether a Parse of sql is forward.go's: one that may change session
// state (refused in transaction pool mode), or that deallocates the engine connection's
// statements.
func pausesParse(sql string) bool {
	return mayHoldSessionState(sql) || sqltok.FirstKeywordIs(sql, sqltok.Postgres, "deallocate", "discard") ||
		proxy.MaySeeSessions(sql, "") // narrowed by forwardParse
}

// parseMessage reads a Parse message's body: the statement's name, its SQL and the declared
// parameter types (4 bytes each); ok is false when the body is malformed (forward.go answers
// it).
func parseMessage(body []byte) (name, sql, oids []byte, ok bool) {
	name, rest, ok := cstring(body)
	if !ok {
		return nil, nil, nil, false
	}
	sql, rest, ok = cstring(rest)
	if !ok || len(rest) < 2 || len(rest) != 2+4*int(binary.BigEndian.Uint16(rest)) {
		return nil, nil, nil, false
	}
	return name, sql, rest[2:], true
}

// sameOIDs reports whether the parameter types declared in oids (a Parse's) are have.
func sameOIDs(have []uint32, oids []byte) bool {
	if len(oids) != 4*len(have) {
		return false
	}
	for i, oid := range have {
		if binary.BigEndian.Uint32(oids[4*i:]) != oid {
			return false
		}
	}
	return true
}

// cstring splits b at its first NUL: the string before it and what follows.
func cstring(b []byte) (s, rest []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}

// fromEngine books an answer of the engine's, as forward.go's relay does.
func (lr *loopRun) fromEngine(msg []byte) relayloop.Verdict {
	c := lr.c
	ws := c.wire
	if ws == nil && lr.held != nil {
		// The kept connection's server spoke between transactions (a ParameterStatus, a
		// notice, a terminated backend's FATAL): the goroutine gives it back, closed.
		return relayloop.Pause
	}
	if msg[0] == 'S' {
		c.noteParameter(msg)
		return relayloop.Relay
	}
	if ws == nil || len(ws.queue) == 0 {
		return relayloop.Pause // out of turn: forward.go reports it
	}
	head := &ws.queue[0]
	run := head.run
	lr.count(run)
	lr.watched++
	switch msg[0] {
	case 'Z':
		if head.kind != 'S' && head.kind != 'Q' || len(msg) != 6 {
			return relayloop.Pause // forward.go reports it
		}
		if head.kind == 'Q' {
			lr.watchQuery(false)
		}
		ws.queue = ws.queue[1:]
		lr.busy = false
		c.txStatus = msg[5]
		lr.sock.Ready(msg[5])
		c.finishRun(run, nil)
		if c.txStatus == 'I' {
			ws.forgetPortals()
			if c.srv.draining.Load() {
				return relayloop.End
			}
			if ws.w.PoolMode == proxy.PoolModeTransaction && len(ws.queue) == 0 {
				if lr.keep(ws) {
					lr.resumeHeld()
					return relayloop.Relay
				}
				lr.unplugging = true
				return relayloop.Unplug
			}
		}
		lr.resumeHeld()
		return relayloop.Relay
	case 'E':
		if run != nil && run.r.Cancelled() && !run.closed {
			return relayloop.Pause // the core's cancel: forward.go explains it
		}
		if head.kind == 'Q' {
			if run != nil && run.err == nil {
				run.err = errorOf(msg)
			}
			return relayloop.Relay
		}
		c.parseFailed(*head)
		c.finishRun(run, errorOf(msg))
		c.skipAfterError()
		return relayloop.Relay
	case 'G', 'W':
		return relayloop.Pause // COPY from the client, CopyBoth: forward.go's
	}
	if head.kind == 'Q' {
		return relayloop.Relay
	}
	switch {
	case msg[0] == '1' && head.kind == 'P':
		swallow := head.swallow
		ws.queue = ws.queue[1:]
		if swallow {
			return relayloop.Drop
		}
	case msg[0] == '2' && head.kind == 'B', msg[0] == '3' && head.kind == 'C',
		(msg[0] == 'T' || msg[0] == 'n') && head.kind == 'D':
		ws.queue = ws.queue[1:]
	case (msg[0] == 'C' || msg[0] == 'I' || msg[0] == 's') && head.kind == 'E':
		ws.queue = ws.queue[1:]
		c.finishRun(run, nil)
	case msg[0] == 't' && head.kind == 'D':
	default:
		return relayloop.Pause // forward.go reports it
	}
	return relayloop.Relay
}

// count moves the rows counted since the engine's last watched message into run's report.
func (lr *loopRun) count(run *wireRun) {
	rows, bytes := lr.rows.Count-lr.rows0, lr.rows.Bytes-lr.bytes0
	lr.rows0, lr.bytes0 = lr.rows.Count, lr.rows.Bytes
	if run != nil {
		run.rows += rows
		run.bytes += bytes - 7*rows
	}
}

// keep ends the transaction of ws keeping its engine connection plugged in for the client's
// next one, when the engine lets it (engine.PGWireKeeper.Keep): the wire is closed and its slot
// freed as at an unplug, and the next admission takes the connection over (OpenPGWire's Kept)
// rather than unplug, give back, take and plug. False: the caller unplugs it.
func (lr *loopRun) keep(ws *wireState) bool {
	c := lr.c
	k, ok := ws.conn.(engine.PGWireKeeper)
	if !ok || c.lateCancel {
		return false // a query timeout's cancel may still be on its way to the backend
	}
	// No CancelRequest reaches the connection from here on (Keep then knows every cancel).
	c.runMu.Lock()
	c.runCancel, c.cancelConn = nil, nil
	c.runMu.Unlock()
	if !k.Keep(lr) {
		return false
	}
	c.closeWire()
	c.spare = ws
	lr.held = k
	lr.rows.WatchAll = true
	return true
}

// Reclaim is engine.PGWireHolder's: the kept connection w goes back to its pool now when no
// transaction runs on it; one a transaction runs on goes back at its end (Keep answers false
// then). One whose last answer is still on its way to the client stays: the engine asks
// again.
func (lr *loopRun) Reclaim(w engine.PGWire) {
	lr.h.Do(func() {
		if lr.held != nil && any(lr.held) == any(w) && lr.c.wire == nil {
			lr.h.UnplugNow()
		}
	})
}

// letGoHeld gives back the connection kept between transactions, before another is plugged in
// or the goroutine admits; false when it cannot leave the pair now (its last answer is still
// on its way to the client).
func (lr *loopRun) letGoHeld() bool {
	return lr.held == nil || lr.h.UnplugNow()
}

// unplugged gives the transaction's engine connection back (transaction pool mode), on the
// loop's thread: the pool's and the slot's bookkeeping, neither of which waits.
func (lr *loopRun) unplugged(_ int, rest []byte) {
	c := lr.c
	if lr.held != nil && (c.wire == nil || any(c.wire.conn) != any(lr.held)) {
		// The connection kept between transactions (c.wire, if any, is the next one's, to be
		// plugged in next).
		lr.held.GiveBack(len(rest) == 0) // the server spoke after the end, unasked
		lr.held, lr.sock = nil, nil
		lr.rows.WatchAll = false
		return
	}
	lr.held = nil // (its wire's Close gives it back)
	if len(rest) > 0 {
		c.wire.conn.Discard() // the server spoke after ReadyForQuery, unasked
	}
	c.runMu.Lock()
	c.runCancel, c.cancelConn = nil, nil
	c.runMu.Unlock()
	ws := c.wire
	c.closeWire()
	if !c.lateCancel {
		c.spare = ws // nothing holds it now: the next transaction's wire reuses it
	}
	c.lateCancel = false
	lr.sock = nil
	lr.unplugging = false
	lr.resumeHeld()
}

// resumeHeld frames again, after what is being handled now, a client message held while a
// statement ran.
func (lr *loopRun) resumeHeld() {
	if lr.waiting {
		lr.waiting = false
		lr.h.Resume(-1)
	}
}

// offLoop takes the client back from the loop, and the engine connection if one is plugged
// in, with what was read but not relayed, and carries on with what the loop left half-done.
func (c *conn) offLoop(lr *loopRun, res relayloop.Result) error {
	c.batchEnded = false // the goroutine takes the next message, whatever it is
	c.endRun()           // the engine's cancel: set again by whatever runs next
	switch {
	case lr.statements > 0:
		c.loopMisses = 0
	case lr.miss:
		c.loopMisses++
	}
	if res.Paused {
		c.srv.loopPauses.Add(1)
	}
	c.srv.loopWatched.Add(int64(lr.watched))
	toClient := res.Leftover[relayloop.BToA]
	if n := res.Scanned[relayloop.BToA]; n > 0 { // relayed as far as the loop is concerned
		c.be.Send(rawMessage(toClient[:n]))
		toClient = toClient[n:]
	}
	ws := c.wire
	if ws != nil && len(ws.queue) > 0 {
		lr.count(ws.queue[0].run) // rows that passed since the engine's last watched message
	}
	if lr.held != nil && (ws == nil || any(ws.conn) != any(lr.held)) {
		// Kept between transactions (ws is another connection's, if any, not plugged in yet):
		// healthy unless its server spoke unasked or ended it.
		unasked := len(toClient) > 0 || res.Remaining[relayloop.BToA] > 0
		lr.held.GiveBack(!unasked && !(res.Err != nil && res.Side == relayloop.BToA))
		toClient = nil
	}
	lr.held = nil // one a transaction runs on is its wire's (c.wire)
	if errors.Is(res.Err, relayloop.ErrMessageTimeout) {
		return c.loopMessageTimeout(lr, res)
	}
	if errors.Is(res.Err, relayloop.ErrWriteTimeout) {
		// The client stopped reading: what the engine has yet to answer is cancelled with its
		// engine connection, and the client's connection ends (writeStalled reports it).
		if ws != nil {
			ws.conn.Discard()
			if len(ws.queue) > 0 {
				c.finishQueue(res.Err)
			}
		}
		return &ioError{res.Err}
	}
	if res.Scanned[relayloop.AToB] > 0 || res.Remaining[relayloop.BToA] > 0 {
		// Stopped half-way through a message (never at a Pause): nothing can pick it up.
		if ws != nil {
			ws.conn.Discard()
		}
		return &ioError{errors.New("the event loop stopped in the middle of a message")}
	}
	c.cr.ahead = append(res.Leftover[relayloop.AToB], c.cr.ahead...)
	if ws != nil && lr.sock != nil {
		lr.sock.Unread(toClient)
	}
	switch {
	case res.Err != nil && res.Side == relayloop.BToA && !res.Paused && !errors.Is(res.Err, relayloop.ErrStopped):
		// The engine connection ended or failed: as forward.go's wireError.
		if ws == nil {
			return nil
		}
		ws.conn.Discard()
		ws.broken = true
		if len(ws.queue) == 0 {
			return nil
		}
		fatal := c.engineConnectionLost(ws, res.Err)
		c.finishQueue(res.Err)
		return fatal
	case res.Err != nil && !res.Paused && !errors.Is(res.Err, relayloop.ErrStopped):
		return &ioError{res.Err} // the client's end
	}
	if lr.busy {
		// A Query or Sync still awaits its ReadyForQuery: forward.go relays the rest of the
		// answers.
		var last pgproto3.FrontendMessage = &pgproto3.Sync{}
		if ws.queue[len(ws.queue)-1].kind == 'Q' {
			last = &pgproto3.Query{}
		}
		err := c.forwardFailed(ws, last, c.pump())
		c.releaseIfIdle(ws)
		return err
	}
	if lr.refused == nil && lr.resend == "" && lr.run == nil {
		return c.flush()
	}
	// The held message is answered here: take it off what the client sent.
	m := c.cr.ahead
	if len(m) < 5 || m[0] != lr.kind {
		return fmt.Errorf("pgwire: the loop handed back no %q message (%d bytes)", lr.kind, len(m))
	}
	n := 1 + int(binary.BigEndian.Uint32(m[1:5]))
	c.cr.consume(n)
	var msg pgproto3.FrontendMessage = &pgproto3.Query{}
	if lr.kind != 'Q' {
		msg = &pgproto3.Execute{}
	}
	switch {
	case lr.refused != nil && ws == nil:
		return c.refuseMessage(msg, c.runError(lr.refused))
	case lr.refused != nil:
		err := c.forwardFailed(ws, msg, c.runError(lr.refused))
		c.releaseIfIdle(ws)
		return err
	case lr.kind == 'E':
		ws.conn.Send(m[:n])
		ws.push(expect{kind: 'E', run: lr.run})
		return nil
	}
	ws.unnamed = ""
	c.forgetOnDiscard(lr.resend)
	c.send(&pgproto3.Query{String: lr.resend}, expect{kind: 'Q', run: lr.run})
	err := c.forwardFailed(ws, msg, c.pump())
	c.releaseIfIdle(ws)
	return err
}

// finishQueue reports every statement the engine has yet to answer, as ended by err.
func (c *conn) finishQueue(err error) {
	ws := c.wire
	for _, e := range ws.queue {
		c.finishRun(e.run, err)
	}
	ws.queue = nil
}

// loopMessageTimeout ends a client that left a message half sent on the loop, as
// receiveFailed does on the goroutine; what the engine has yet to answer is cancelled with its
// engine connection.
func (c *conn) loopMessageTimeout(lr *loopRun, res relayloop.Result) error {
	err := netlimit.MessageTimeoutError(c.srv.opts.Limits.MessageTimeout)
	if ws := c.wire; ws != nil && len(ws.queue) > 0 {
		ws.conn.Discard()
		c.finishQueue(err)
	}
	if res.Remaining[relayloop.BToA] > 0 {
		return &ioError{err} // the client is in the middle of an engine's message: no FATAL fits
	}
	return c.receiveFailed(err)
}

// idle reports, on the loop's thread, whether the client sits between statements outside a
// transaction (Drain ends it then).
func (lr *loopRun) idle() bool {
	return len(lr.c.wire.queueOrNil()) == 0 && !lr.unplugging && lr.c.txStatus == 'I'
}

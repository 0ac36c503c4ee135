package mysqlwire

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/proxy"
)

// The event loop (internal/relayloop): a client in plain TCP, outside a transaction, whose
// last command was a COM_QUERY, is relayed in its steady state by the server's event loop
// instead of its goroutine, as PostgreSQL clients are (pgwire's loop.go); a COM_QUERY the
// goroutine reads (a session's first, the first after another command) goes to the loop with
// the session when the loop would relay it, and a COM_PING is answered there. The loop's
// thread reads the client's COM_QUERY, admits it (proxy.Core.AdmitPassthrough under proxy.NoWait:
// routing, checks, a slot that needs no waiting), takes an idle loop connection of the engine
// (mysqlengine.LoopConn: its result sets are framed as this frontend's clients expect), writes
// the packet to it (after the comment naming its capacity lease's tag, when it runs under one,
// as mysqlengine writes it) and relays the engine's answer straight back, watching only the
// packets that may end it (the result's head, the EOF or ERR after its rows: relayloop.MySQL's
// Rows) to find the statement's end; rows are counted as they pass. The statement is reported
// (proxy.Relay.Finish) on the loop's thread. Its engine connection stays plugged in for the
// client's next statement while nobody else needs it (mysqlengine.LoopConn.Keep: no take,
// plug, unplug and give-back per statement); it goes back to its pool when another client
// waits for a connection, when the client pauses (the engine's sweep reclaims it), when the
// next statement needs another one (another engine, database or flag set), when a statement
// leaves a transaction open on it, and whenever the session leaves the loop.
//
// What may wait, or needs more than the loop does, is the goroutine's. An engine connection
// to open: the loop holds the client's packet and the goroutine opens one and plugs it in.
// Everything else is handed back with the bytes read but not relayed, and the goroutine goes
// on as passthrough.go does: a command other than COM_QUERY, a statement the session answers
// or that may change session state (loopStatement), an admission that would wait, a refusal
// (the core has reported it; the goroutine writes it), guardrails on rows or bytes, a
// statement the core rewrote. A statement
// whose end needs the goroutine stops the loop at its last packet, which the goroutine then
// answers: one with warnings (read from its engine connection for SHOW WARNINGS) or one that
// was cancelled (KILL QUERY, the group's query timeout, a lost lease), whose error the core
// names. A statement whose client went half-way ends the session; one whose engine connection
// ended half-way gets the client an ERR in place of the rest, and the session goes on (unless
// the client was left in the middle of a packet, which nothing can finish).

// loopMissesMax is how many commands other than COM_QUERY a client may send on the loop before
// it is no longer put on it: prepared statements would pay for a hand-over each.
const loopMissesMax = 4

// engineWatchMax is the longest engine packet the loop's Watch sees whole: every ERR, EOF,
// OK and column definition is shorter. Rows stream past the Watch, counted, whatever their
// size (relayloop.MySQL's Rows); those up to this long are still relayed whole.
const engineWatchMax = 4 << 10

// Hand-offs in a row (admissions that would wait, statements for the Arrow path) after which
// a client leaves the loop for loopBackoff commands: each costs more than the loop saves.
const (
	loopHandOffsMax = 4
	loopBackoff     = 64
)

// Where a statement's answer stands, as the loop's Watch follows it.
const (
	phaseHead    = iota // the first packet: OK, ERR, LOCAL INFILE or a column count
	phaseColumns        // column definitions, up to their EOF (watched when the column count was not read)
	phaseRows           // rows, up to the EOF or ERR that ends them
)

// loopEngine is an engine with loop connections (mysqlengine.Engine).
type loopEngine interface {
	Loopable() bool
	TakeLoopConn(q *query.Request) *mysqlengine.LoopConn
	OpenLoopConn(ctx context.Context, q *query.Request) (*mysqlengine.LoopConn, error)
}

// loopRun is the session's state on the loop while the pair runs; only the loop's thread
// touches it then, but for what mu guards (the goroutine waits for its events).
type loopRun struct {
	h       *session
	hd      *relayloop.Handle
	events  chan loopEvent
	noWait  context.Context // the session's, for admissions that must not wait
	core    passthroughBackend
	fromCli relayloop.MySQL // every client packet watched
	rows    relayloop.MySQL // the engine's: short packets watched, rows counted

	// A COM_PING is answered on the loop (ping): pingOK written straight to the client's
	// socket, clientFD; what of it the socket did not take (unsent) is written off the loop.
	clientFD       int
	pingOK, unsent []byte

	// The statement in flight (busy) on conn: its report run, where its answer stands, the
	// rows and bytes counted by the Watch and by the framer (from count0, bytes0 on).
	busy                bool
	phase               int
	run                 *proxy.Relay
	conn                *mysqlengine.LoopConn // also between statements, kept (kept)
	healthy             bool                  // the statement left no transaction open on conn
	stopAfter           func() bool
	seen, seenBytes     int64
	count0, bytes0      int64
	final               bool // stopped at the statement's last packet, for the goroutine
	waiting, unplugging bool // a client packet is held until the statement's conn is out

	// stmt is the request of the statement the loop admits, one per run: the core keeps none
	// once the statement is finished, before the loop reads the next one, and a request handed
	// to the goroutine (admittedReq) ends the run.
	stmt query.Request
	// plain is stmt as fillAs writes it for a statement that names no session value, less its
	// text: filled once a run (nothing fillAs reads changes while the session is on the loop:
	// USE, SET and the rest are the goroutine's), copied for each statement rather than
	// written field by field (~100 instructions a statement).
	plain     query.Request
	plainMade bool
	// admission is where the core makes the admission of each statement the loop admits, for
	// the same reasons: the loop admits a statement only once the one before is finished, and
	// one it hands to the goroutine ends the run.
	admission proxy.Admission
	// lastSQL is the last statement the loop took (loopStatement passed it): a client that
	// sends the same text again (a pool's health check, a benchmark, an application's fixed
	// statements) shares its string rather than copying it out of the loop's buffer once more,
	// and it is not read again for whether the loop may run it, nor for session values when it
	// names none (lastPlain).
	lastSQL   string
	lastPlain bool
	// shape is lastSQL's sqltok.Shape, handed on with each of its requests (query.Request.Shape):
	// the core's shared engine user checks and the history's redaction remember what they
	// found of the text there, and do not read it again at each statement.
	shape *sqltok.Shape

	// An admitted statement whose engine connection the goroutine opens (held meanwhile), and
	// the engine tag of its capacity lease ("": none).
	adm    *proxy.Admission
	req    *query.Request
	tag    string
	opened *mysqlengine.LoopConn
	// tagged is the last tagged COM_QUERY (taggedQuery), its buffer reused.
	tagged []byte

	miss bool // handed back at a command that is not a COM_QUERY

	watched int64 // engine packets the Watch looked at (Server.LoopWatched once the run ends)

	mu        sync.Mutex
	running   *mysqlengine.LoopConn // what cancel kills
	cancelled atomic.Bool           // set under mu; read without it at every statement's end
	cancel    func()
	// What cancelIfDue asks whether the running statement is to stop: its capacity slot and
	// its engine context (nil until its Relay is made).
	slot   capacity.Slot
	runCtx context.Context
	// cancelIfDue, as a func made once per run (no closure per statement).
	cancelDue func()
}

type loopEvent struct {
	open bool // open an engine connection for adm and plug it in
	done *relayloop.Result
}

// eventLoop is the server's loop, started on first use; nil where there is none.
func (s *Server) eventLoop() *relayloop.Loop { return s.loop.Get() }

// LoopStatements is how many statements the event loop has relayed.
func (s *Server) LoopStatements() int64 { return s.loopStatements.Load() }

// LoopEntries is how many times a session went on the event loop (to wait for its next
// command there).
func (s *Server) LoopEntries() int64 { return s.loopEntries.Load() }

// LoopHandOvers is how many statements the event loop admitted and then handed to their
// session's goroutine to relay (rewritten by the core, or limited per row).
func (s *Server) LoopHandOvers() int64 { return s.loopHandOvers.Load() }

// LoopWatched is how many engine packets the event loop's Watch looked at, counted as sessions
// leave the loop: what the loop pays per statement beyond relaying its bytes.
func (s *Server) LoopWatched() int64 { return s.loopWatched.Load() }

// loopable reports whether the session can go on the loop now, its last command a COM_QUERY
// (what the client sends next is likely another).
func (h *session) loopable() bool { return h.lastWasQuery && h.canLoop() }

// canLoop reports whether the session can go on the loop: plain TCP, outside a transaction,
// nothing half-read, not too many commands seen there that the loop does not take.
func (h *session) canLoop() bool {
	if h.lc == nil || h.pinned != nil || h.autocommitOff || h.more ||
		h.loopMisses >= loopMissesMax || h.admitted != nil || h.refused != nil || h.s.draining.Load() {
		return false
	}
	if h.ctx.Err() != nil {
		return false
	}
	if h.loopBackoff > 0 {
		h.loopBackoff--
		return false
	}
	if !h.gate.idle() || !h.out.idle() {
		return false
	}
	if _, ok := h.s.backend.(passthroughBackend); !ok {
		return false
	}
	return h.s.eventLoop() != nil
}

// loopWith puts the session on the loop with data, a command the goroutine read, when the
// loop relays it: so the first statement of a session, or the first after a command the loop
// does not take, runs there too. ran is false when the goroutine is to answer it.
func (h *session) loopWith(data []byte) (ran bool, err error) {
	// canLoop before loopStatement: a session that cannot go on the loop (TLS, a transaction)
	// pays nothing for its statements here, not a copy of each and a look at its words.
	if len(data) > loopAheadMax || data[0] != mysql.COM_QUERY || !h.canLoop() || !loopStatement(string(data[1:])) {
		return false, nil
	}
	kept := h.gate.ahead
	h.gate.ahead = append(append(make([]byte, 0, 4+len(data)+len(kept)),
		byte(len(data)), byte(len(data)>>8), byte(len(data)>>16), 0), data...)
	h.gate.ahead = append(h.gate.ahead, kept...)
	if ran, err = h.onLoop(); !ran {
		h.gate.ahead = kept
	}
	return ran, err
}

// loopAheadMax is the longest command the goroutine hands to the loop (it must fit in the
// loop's buffer with what the client sent after it).
const loopAheadMax = 16 << 10

// onLoop relays the session on the event loop until the loop hands it back; then the session
// goes on as before. ok is false when it could not start.
func (h *session) onLoop() (ok bool, err error) {
	if err := h.out.w.Flush(); err != nil {
		return true, err
	}
	fd, err := h.lc.Lend()
	if err != nil {
		return false, nil
	}
	lr := &loopRun{h: h, events: make(chan loopEvent, 2), clientFD: fd, pingOK: h.pingOK()}
	lr.fromCli.WatchMax = math.MaxInt
	lr.rows.WatchMax = engineWatchMax
	lr.cancel, lr.cancelDue = lr.cancelStatement, lr.cancelIfDue
	lr.noWait = proxy.NoWait(h.ctx)
	ahead := h.gate.ahead
	h.gate.ahead = nil
	lr.core = h.s.backend.(passthroughBackend) // canLoop saw it is one
	lr.hd = h.s.eventLoop().NewHandle()
	err = lr.hd.Start(relayloop.Pair{A: fd, B: -1, Ahead: ahead,
		Framing:        [2]relayloop.Framer{&lr.fromCli, &lr.rows},
		Watch:          lr.watch,
		Unplugged:      lr.unplugged,
		KeepB:          true, // the engine's loop connections come back statement after statement
		StayB:          true, // and one stays plugged in from statement to statement (Keep)
		Done:           func(res relayloop.Result) { lr.events <- loopEvent{done: &res} },
		MessageTimeout: h.s.opts.Limits.MessageTimeout,    // as the packet gate's
		WriteTimeout:   h.s.opts.Limits.WriteStallTimeout, // as the goroutine's writes (BoundWrites)
	})
	if err != nil {
		h.gate.ahead = ahead
		return false, nil
	}
	h.s.loopEntries.Add(1)
	h.idleMu.Lock()
	h.onloop = lr
	switch { // KILL CONNECTION or Drain came meanwhile
	case h.killed:
		lr.hd.Stop()
	case h.s.draining.Load():
		lr.hd.StopIf(lr.idle)
	}
	h.idleMu.Unlock()
	res := lr.wait()
	h.idleMu.Lock()
	h.onloop = nil
	h.idleMu.Unlock()
	return true, h.offLoop(lr, res)
}

// setCancel is the session's running statement's cancel, for KILL QUERY (nil: none runs).
func (h *session) setCancel(cancel context.CancelFunc) {
	h.mu.Lock()
	h.cancel = cancel
	h.mu.Unlock()
}

// wait opens engine connections for what the loop holds until the pair stops, and returns how
// it stopped.
func (lr *loopRun) wait() relayloop.Result {
	for {
		var ev loopEvent
		select {
		case ev = <-lr.events:
		case <-lr.h.ctx.Done():
			lr.hd.Stop()
			for ev = <-lr.events; ev.done == nil; ev = <-lr.events {
			}
		}
		if ev.done != nil {
			return *ev.done
		}
		lr.open()
	}
}

// open opens a loop connection for the held statement and plugs it in; when it cannot, the
// loop hands the session back and the goroutine runs the statement under its admission.
func (lr *loopRun) open() {
	lc, err := lr.adm.Engine.(loopEngine).OpenLoopConn(lr.h.ctx, lr.req)
	if err != nil {
		lr.hd.Stop()
		return
	}
	fd, ok := lc.Lend()
	if !ok {
		lc.Release(false)
		lr.hd.Stop()
		return
	}
	lr.opened = lc // read by the loop's thread after Resume
	lr.hd.Resume(fd)
}

// cancelStatement is the session's cancel while it is on the loop (KILL QUERY from another
// session): the running statement is killed on the engine, and its end is answered with the
// cancel's error. A lost lease and the group's query timeout go through cancelIfDue.
func (lr *loopRun) cancelStatement() {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.running != nil {
		lr.cancelled.Store(true)
		lr.running.Kill()
	}
}

// cancelIfDue is the cancel of a lost lease and of the group's query timeout. Each was set up
// for one statement but may land after it ended, while the session's next one runs: the lease
// guard runs the callbacks of the leases it fenced after letting go of its lock (the statement
// may finish and release its slot meanwhile), and an AfterFunc runs on a goroutine of its own.
// So it stops the running statement only if that statement's own lease is lost or its own
// context ended; KILL QUERY (cancelStatement) stops whatever runs.
func (lr *loopRun) cancelIfDue() {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.running != nil && (lr.slot.Lost() || lr.runCtx != nil && lr.runCtx.Err() != nil) {
		lr.cancelled.Store(true)
		lr.running.Kill()
	}
}

func (lr *loopRun) wasCancelled() bool { return lr.cancelled.Load() }

// watch is the pair's Watch, on the loop's thread.
func (lr *loopRun) watch(d relayloop.Direction, msg []byte) relayloop.Verdict {
	if d == relayloop.AToB {
		return lr.fromClient(msg)
	}
	return lr.fromEngine(msg)
}

func (lr *loopRun) fromClient(msg []byte) relayloop.Verdict {
	h := lr.h
	if lr.unsent != nil {
		return relayloop.Hold // the pair stops: the goroutine finishes a ping's answer first
	}
	if lr.busy || lr.unplugging {
		lr.waiting = true // framed again once the statement is over
		return relayloop.Hold
	}
	if lr.adm != nil { // held until the goroutine plugged an engine connection in
		if lr.opened == nil {
			return relayloop.Hold
		}
		lr.conn, lr.opened = lr.opened, nil
		return lr.begin(msg)
	}
	if len(msg) == 5 && msg[4] == mysql.COM_PING {
		if lr.conn != nil && lr.hd.Writing(relayloop.BToA) {
			return relayloop.Pause // the answer before is still on its way: the goroutine answers after it
		}
		return lr.ping()
	}
	if len(msg) < 5 || msg[4] != mysql.COM_QUERY {
		lr.miss = true
		return relayloop.Pause
	}
	sql := lr.lastSQL
	if sql == "" || sql != string(msg[5:]) { // (compared without a copy)
		if sql = string(msg[5:]); !loopStatement(sql) {
			return relayloop.Pause
		}
		lr.lastSQL, lr.lastPlain, lr.shape = sql, !mayHoldSessionValue(sql), new(sqltok.Shape)
	}
	req := &lr.stmt
	if lr.lastPlain {
		if !lr.plainMade {
			h.fillAs(&lr.plain, "", nil)
			lr.plainMade = true
		}
		*req = lr.plain
		req.SQL, req.Shape = sql, sqltok.Shaped(sql, lr.shape)
	} else {
		h.fill(req, sql, nil) // the values written in as they are now
	}
	adm, ok, err := lr.core.AdmitPassthroughInto(lr.noWait, req, canRelay, &lr.admission)
	switch {
	case err != nil && errors.Is(err, engine.ErrWouldWait):
		h.handedOff()
		return relayloop.Pause
	case err != nil:
		h.refused = err // reported by the core; the goroutine answers it
		return relayloop.Pause
	case !ok:
		// The Arrow path: counted like a hand-over, so a session whose statements all go there
		// (an engine of another kind, passthrough off) stops paying a pair per statement.
		h.handedOff()
		return relayloop.Pause
	}
	le, isLoop := adm.Engine.(loopEngine)
	if !isLoop || !le.Loopable() || req.SQL != sql || adm.CheckLimits(math.MaxInt64/2, math.MaxInt64/2) != nil {
		// Rewritten by the core or guardrails that need each row: the goroutine relays it,
		// and the loop's admission was a hand-over for nothing. Counted like an admission
		// that would wait, so a session whose statements all go so leaves the loop for a while.
		h.handedOff()
		h.s.loopHandOvers.Add(1)
		h.admitted, h.admittedReq = adm, req
		return relayloop.Pause
	}
	lr.adm, lr.req, lr.tag = adm, req, capacity.SlotTag(adm.Slot())
	if lr.conn != nil { // kept from the statement before
		if lr.conn.Serves(adm.Engine, req) {
			h.loopHandOffs = 0
			return lr.begin(msg)
		}
		if !lr.hd.UnplugNow() { // its last answer is still on its way to the client
			lr.adm, lr.req, lr.tag = nil, nil, ""
			h.admitted, h.admittedReq = adm, req
			return relayloop.Pause
		}
	}
	lc := le.TakeLoopConn(req)
	if lc == nil {
		lr.events <- loopEvent{open: true}
		return relayloop.Hold
	}
	fd, ok := lc.Lend()
	if !ok || lr.hd.Plug(fd) != nil {
		lc.Release(false)
		lr.adm, lr.req, lr.tag = nil, nil, ""
		h.admitted, h.admittedReq = adm, req
		return relayloop.Pause
	}
	lr.conn = lc
	h.loopHandOffs = 0
	return lr.begin(msg)
}

// ping answers a COM_PING as the goroutine does, on the loop: connection pools ping often, and
// each ping handed back would cost a hand-over. Nothing else goes to the client meanwhile (no
// statement runs). A socket that takes none of the answer (a client that does not read) hands
// the ping to the goroutine; one that takes part of it stops the pair, the rest written first.
func (lr *loopRun) ping() relayloop.Verdict {
	n, _ := syscall.Write(lr.clientFD, lr.pingOK)
	if n <= 0 {
		return relayloop.Pause
	}
	lr.h.s.loopPings.Add(1)
	if n < len(lr.pingOK) {
		lr.unsent = lr.pingOK[n:]
		lr.hd.Stop()
	}
	return relayloop.Drop
}

// pingOK is the OK packet the goroutine answers a COM_PING with (go-mysql's writeOK of no
// result): the session's status, and an empty session-state block when the client tracks it.
func (h *session) pingOK() []byte {
	var status uint16
	for bit := uint16(1); bit != 0; bit <<= 1 {
		if h.conn.HasStatus(bit) {
			status |= bit
		}
	}
	p := []byte{0, 0, 0, 1, mysql.OK_HEADER, 0, 0, byte(status), byte(status >> 8), 0, 0}
	if h.conn.HasCapability(mysql.CLIENT_SESSION_TRACK) {
		p = mysql.AppendOKSessionTrackSuffix(p, &mysql.Result{Status: status})
	}
	p[0] = byte(len(p) - 4)
	return p
}

// begin starts the admitted statement of msg on lr.conn (plugged in) and relays msg, after
// its lease's tag when it runs under one (lr.tag).
func (lr *loopRun) begin(msg []byte) relayloop.Verdict {
	h := lr.h
	adm, sql, tag := lr.adm, lr.req.SQL, lr.tag
	lr.adm, lr.req, lr.tag = nil, nil, ""
	lr.conn.Begin()
	lr.mu.Lock()
	// h.ctx until the Relay's own is made: the statement's context is h.ctx or one under it,
	// and most often h.ctx itself (no query timeout, no lease tag), which needs no second lock.
	lr.running, lr.slot, lr.runCtx = lr.conn, adm.Slot(), h.ctx
	lr.cancelled.Store(false)
	lr.mu.Unlock()
	h.setCancel(lr.cancel)
	run := adm.Relay(h.ctx, lr.cancelDue)
	if run.Ctx != h.ctx { // the group's query timeout, or a lease's tag
		lr.mu.Lock()
		lr.runCtx = run.Ctx
		lr.mu.Unlock()
		lr.stopAfter = context.AfterFunc(run.Ctx, lr.cancelDue)
	}
	lr.busy, lr.phase, lr.run, lr.healthy, lr.final = true, phaseHead, run, true, false
	lr.rows.Seq, lr.rows.Skip, lr.rows.Rows = 0, 0, false // the client's COM_QUERY: the engine answers from 1 on
	lr.seen, lr.seenBytes, lr.count0, lr.bytes0 = 0, 0, lr.rows.Count, lr.rows.Bytes
	h.warnings = 0
	h.forgetDiagnostics(sql)
	h.s.loopStatements.Add(1)
	if tag != "" {
		lr.tagged = taggedQuery(lr.tagged[:0], msg, tag)
		return lr.hd.Replacing(lr.tagged)
	}
	return relayloop.Relay
}

// taggedQuery appends to b the COM_QUERY packet msg (whole, its header included) with its
// statement after tag's comment (mysqlengine.AppendTag): one packet still (the loop's statements
// fit in its buffer, far under a packet's largest payload).
func taggedQuery(b, msg []byte, tag string) []byte {
	start := len(b)
	b = mysqlengine.AppendTag(append(b, 0, 0, 0, msg[3], mysql.COM_QUERY), tag, msg[5:])
	n := len(b) - start - 4
	b[start], b[start+1], b[start+2] = byte(n), byte(n>>8), byte(n>>16)
	return b
}

func (lr *loopRun) fromEngine(msg []byte) relayloop.Verdict {
	lr.watched++
	if !lr.busy || len(msg) < 5 {
		return relayloop.Pause // out of turn: the goroutine ends the session
	}
	lr.rows.Seq = msg[3]
	p := msg[4:]
	isEOF := p[0] == mysql.EOF_HEADER && len(p) < 9
	switch {
	case p[0] == mysql.ERR_HEADER: // never a column definition's or a row's first byte
		return lr.failed(p)
	case lr.phase == phaseHead && p[0] == mysql.OK_HEADER:
		return lr.ended(okStatus(p))
	case lr.phase == phaseHead && p[0] == mysql.LocalInFile_HEADER:
		lr.final = true
		return relayloop.Pause // the goroutine refuses it
	case lr.phase == phaseHead:
		lr.phase = phaseColumns
		if n, ok := columnCount(p); ok {
			// The column definitions and their EOF (a loop connection is opened without
			// CLIENT_DEPRECATE_EOF) come next, and the Watch needs none of them: they stream
			// through, and what it sees next is a row or the result's end.
			lr.rows.Skip = n + 1
			lr.phase, lr.rows.Rows = phaseRows, true
		}
	case lr.phase == phaseColumns && isEOF:
		lr.phase, lr.rows.Rows = phaseRows, true
	case lr.phase == phaseRows && isEOF:
		return lr.ended(eofStatus(p))
	case lr.phase == phaseRows: // (the framer counts the rows while Rows is set: none comes here)
		lr.seen++
		lr.seenBytes += int64(len(p))
	}
	return relayloop.Relay
}

// columnCount reads the column count that heads a result set, when it is one MySQL allows.
func columnCount(p []byte) (int, bool) {
	n, isNull, size := mysql.LengthEncodedInt(p)
	if isNull || size != len(p) || n == 0 || n > columnsMax {
		return 0, false
	}
	return int(n), true
}

// columnsMax is the most columns a MySQL or MariaDB table (and so a result) has.
const columnsMax = 4096

// okStatus and eofStatus read the status flags and warning count of an OK or EOF payload.
func okStatus(p []byte) (status, warnings uint16) {
	_, _, n := mysql.LengthEncodedInt(p[1:])
	_, _, m := mysql.LengthEncodedInt(p[min(1+n, len(p)):])
	at := 1 + n + m
	if n == 0 || m == 0 || at+4 > len(p) {
		return 0, 0
	}
	return binary.LittleEndian.Uint16(p[at:]), binary.LittleEndian.Uint16(p[at+2:])
}

func eofStatus(p []byte) (status, warnings uint16) {
	if len(p) < 5 {
		return 0, 0
	}
	return binary.LittleEndian.Uint16(p[3:]), binary.LittleEndian.Uint16(p[1:])
}

// ended is the packet ending a result: the statement's end unless more results follow.
func (lr *loopRun) ended(status, warnings uint16) relayloop.Verdict {
	lr.rows.Rows = false
	if status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		lr.phase = phaseHead
		return relayloop.Relay
	}
	lr.healthy = status&mysql.SERVER_STATUS_IN_TRANS == 0
	if warnings > 0 || lr.wasCancelled() || lr.run.Ctx.Err() != nil {
		lr.final = true // the goroutine reads the warnings, or names the cancel
		return relayloop.Pause
	}
	lr.finish(nil)
	return lr.keepOrUnplug()
}

// failed is the engine's ERR ending the statement: relayed as it is, unless a cancel caused
// it (the goroutine names that).
func (lr *loopRun) failed(p []byte) relayloop.Verdict {
	lr.rows.Rows = false
	if lr.wasCancelled() || lr.run.Ctx.Err() != nil {
		lr.final = true
		return relayloop.Pause
	}
	lr.healthy = lr.healthy && !mysqlengine.EndsConnection(p)
	if me, ok := lr.conn.Error(p).(*query.Error); ok {
		lr.h.noteError(toMySQLError(me))
		lr.finish(me)
	} else {
		lr.finish(errors.New("mysqlwire: an engine error that could not be read"))
	}
	return lr.keepOrUnplug()
}

// keepOrUnplug is the verdict on the packet that ended a statement: relayed with the engine
// connection kept plugged in for the client's next statement, when it is healthy and the
// engine lets the client keep it; else unplugged and given back (unplugged).
func (lr *loopRun) keepOrUnplug() relayloop.Verdict {
	if !lr.healthy || !lr.conn.Keep(lr) {
		return relayloop.Unplug
	}
	lr.unplugging = false
	if lr.waiting { // the client's next packet came meanwhile
		lr.waiting = false
		lr.hd.Resume(-1)
	}
	return relayloop.Relay
}

// kept reports whether the session keeps an engine connection between statements (on the
// loop's thread, or once the pair stopped).
func (lr *loopRun) kept() bool { return lr.conn != nil && !lr.busy && !lr.unplugging }

// Reclaim is mysqlengine.Holder's: lc goes back to its pool now if the session keeps it
// between statements; one it runs a statement on goes back at the statement's end (Keep
// answers false then). One whose last answer is still on its way to the client stays: the
// engine's sweep asks again.
func (lr *loopRun) Reclaim(lc *mysqlengine.LoopConn) {
	lr.hd.Do(func() {
		if lr.conn == lc && lr.kept() && lr.adm == nil {
			lr.hd.UnplugNow()
		}
	})
}

// finish reports the statement (its engine connection leaves at Unplug, or stays: keepOrUnplug).
func (lr *loopRun) finish(err error) {
	lr.stopRunning()
	rows, bytes := lr.counted()
	_ = lr.run.Finish(rows, bytes, err)
	lr.run, lr.busy, lr.unplugging = nil, false, true
}

// counted is the statement's rows and row bytes so far: the Watch's and the framer's.
func (lr *loopRun) counted() (rows, bytes int64) {
	return lr.seen + lr.rows.Count - lr.count0, lr.seenBytes + lr.rows.Bytes - lr.bytes0
}

// stopRunning ends what a cancel may kill.
func (lr *loopRun) stopRunning() {
	lr.h.setCancel(nil)
	lr.mu.Lock()
	lr.running, lr.slot, lr.runCtx = nil, nil, nil
	lr.mu.Unlock()
	if lr.stopAfter != nil {
		lr.stopAfter()
		lr.stopAfter = nil
	}
}

// unplugged gives the statement's engine connection back, on the loop's thread.
func (lr *loopRun) unplugged(_ int, rest []byte) {
	lr.conn.Release(lr.healthy && len(rest) == 0) // the server spoke after the end, unasked
	lr.conn, lr.unplugging = nil, false
	if lr.waiting {
		lr.waiting = false
		lr.hd.Resume(-1)
	}
}

// idle reports, on the loop's thread, whether the session waits between statements (Drain
// ends it then).
func (lr *loopRun) idle() bool { return !lr.busy && !lr.unplugging && lr.adm == nil && !lr.waiting }

// errLoopStopped ends a session the loop stopped in the middle of something.
var errLoopStopped = errors.New("mysqlwire: the event loop stopped in the middle of a statement")

// offLoop takes the session back from the loop, with what was read but not relayed, and
// carries on with what the loop left half-done. An error ends the session.
func (h *session) offLoop(lr *loopRun, res relayloop.Result) error {
	h.lastWasQuery = false // the goroutine takes the next command, whatever it is
	h.s.loopWatched.Add(lr.watched)
	keptLost := false
	if lr.kept() {
		// Healthy unless its server spoke unasked or ended it meanwhile; the session goes on.
		keptLost = res.Err != nil && res.Side == relayloop.BToA
		unasked := len(res.Leftover[relayloop.BToA]) - res.Scanned[relayloop.BToA]
		lr.conn.Release(!keptLost && unasked == 0 && res.Remaining[relayloop.BToA] == 0)
		lr.conn = nil
	}
	h.loopGaveBack = len(res.Leftover[relayloop.AToB]) > 0
	if lr.miss {
		h.loopMisses++
	}
	if lr.unsent != nil { // a ping's answer, the rest of
		if _, err := h.out.Write(lr.unsent); err != nil {
			return err
		}
	}
	toClient := res.Leftover[relayloop.BToA]
	if n := res.Scanned[relayloop.BToA]; n > 0 { // relayed as far as the loop is concerned
		if _, err := h.out.Write(toClient[:n]); err != nil {
			lr.abort(nil)
			return err
		}
		toClient = toClient[n:]
	}
	if lr.opened != nil { // opened for a statement the loop did not get to
		lr.opened.Release(true)
		lr.opened = nil
	}
	if lr.adm != nil { // the goroutine runs it, its packet held in what the client sent
		h.admitted, h.admittedReq = lr.adm, lr.req
		lr.adm, lr.req, lr.tag = nil, nil, ""
	}
	lost := lr.lost(res)
	switch {
	case errors.Is(res.Err, relayloop.ErrWriteTimeout):
		h.loopWriteStalled = true
		lr.abort(nil) // the statement is cancelled, its engine connection freed
		return res.Err
	case errors.Is(res.Err, relayloop.ErrMessageTimeout):
		lr.abort(nil)
		return h.gate.timedOut()
	case res.Scanned[relayloop.AToB] > 0 || res.Remaining[relayloop.BToA] > 0:
		lr.abort(lost) // in the middle of a packet: nothing can pick it up
		return errLoopStopped
	case lr.busy && lr.final && res.Paused && len(toClient) >= 5:
		h.gate.ahead = append(res.Leftover[relayloop.AToB], h.gate.ahead...)
		h.lastWasQuery = true // the loop may take the next one
		return h.finishOffLoop(lr, toClient)
	case lost != nil && lr.betweenPackets():
		h.gate.ahead = append(res.Leftover[relayloop.AToB], h.gate.ahead...)
		return h.answerLost(lr, lost)
	case lr.busy:
		// The client or the engine went (half-way through a packet), or the server stops.
		lr.abort(lost)
		if res.Err == nil {
			return errLoopStopped
		}
		return res.Err
	case lr.conn != nil: // stopped while the engine connection was leaving
		lr.conn.Release(false)
		lr.conn = nil
	}
	h.gate.ahead = append(res.Leftover[relayloop.AToB], h.gate.ahead...)
	if h.isKilled() {
		return errKilled
	}
	if res.Err != nil && !res.Paused && !errors.Is(res.Err, relayloop.ErrStopped) && !keptLost {
		return res.Err // the client's end
	}
	return h.out.w.Flush()
}

var errKilled = errors.New("mysqlwire: connection killed")

// finishOffLoop answers the statement the loop stopped at its last packet (at the start of
// toClient), on the goroutine: the engine's answer with the warnings read for SHOW WARNINGS,
// or the cancel's error.
func (h *session) finishOffLoop(lr *loopRun, toClient []byte) error {
	n := 4 + packetLen(toClient)
	last, seq := toClient[4:n], toClient[3]
	healthy := lr.healthy && len(toClient) == n
	lc := lr.conn
	lr.conn = nil
	lr.stopRunning()
	rows, bytes := lr.counted()
	run := lr.run
	lr.run, lr.busy = nil, false
	var err error
	switch {
	case lr.wasCancelled():
		err = run.Finish(rows, bytes, context.Canceled)
	case run.Ctx.Err() != nil:
		err = run.Finish(rows, bytes, run.Ctx.Err())
	case last[0] == mysql.LocalInFile_HEADER:
		err = run.Finish(rows, bytes, errors.New("LOAD DATA LOCAL INFILE is not supported through queryflux"))
	}
	if err != nil {
		lc.Kill()
		lc.Release(false)
		h.conn.Sequence = seq
		me := toMySQLError(err)
		h.noteError(me)
		if werr := h.writeErrorPacket(me); werr != nil {
			return werr
		}
		return h.out.w.Flush()
	}
	ws, ok := lc.Warnings()
	lc.Release(healthy && ok)
	h.noteWarnings(ws)
	_ = run.Finish(rows, bytes, nil)
	if err := h.writeRelayed(toClient[:n], seq+1); err != nil {
		return err
	}
	return h.out.w.Flush()
}

// lost is the error of the running statement whose engine connection ended under it (the
// pair stopped at its end), nil when something else stopped the pair.
func (lr *loopRun) lost(res relayloop.Result) error {
	if !lr.busy || res.Side != relayloop.BToA || !errors.Is(res.Err, relayloop.ErrClosed) {
		return nil
	}
	return lr.conn.Lost(res.Err)
}

// betweenPackets reports whether the client got whole packets of the running statement's
// answer, ending where an ERR may come: before any, or after a whole row.
func (lr *loopRun) betweenPackets() bool {
	return lr.phase == phaseHead || lr.phase == phaseRows && lr.rows.Skip == 0 && !lr.rows.Continues()
}

// answerLost answers a statement whose engine connection ended between two of its packets
// (the engine went, or its statement was cut after a cancel that could not reach it): the
// client gets an ERR it can read in place of the rest, and its session goes on.
func (h *session) answerLost(lr *loopRun, lost error) error {
	seq := lr.rows.Seq + 1
	me := toMySQLError(lr.abort(lost))
	h.noteError(me)
	h.conn.Sequence = seq
	if err := h.writeErrorPacket(me); err != nil {
		return err
	}
	return h.out.w.Flush()
}

// abort ends a statement the loop stopped half-way, its engine connection closed. lost is the
// error of an engine connection that ended under it; without one (the client went, or the
// server stops) the statement is killed on the engine and reported cancelled. A cancel that
// came first names the end. It returns the error the client is to see.
func (lr *loopRun) abort(lost error) error {
	if !lr.busy {
		return lost
	}
	lr.stopRunning()
	err := lost
	switch {
	case lost == nil || lr.wasCancelled():
		err = context.Canceled
	case lr.run.Ctx.Err() != nil:
		err = lr.run.Ctx.Err()
	}
	if lost == nil {
		lr.conn.Abandon() // returns once the statement is gone: its slot is freed after it
	} else {
		lr.conn.Release(false)
	}
	lr.conn = nil
	rows, bytes := lr.counted()
	err = lr.run.Finish(rows, bytes, err)
	lr.run, lr.busy = nil, false
	return err
}

// loopStatement reports whether sql may run on the loop: one statement that reads or writes
// rows and leaves no session state (those the session answers itself, transactions, locks,
// user variables, SET, LOAD DATA, CALL and multi-statements are the goroutine's).
func loopStatement(sql string) bool {
	if len(sql) < 6 || sql[0]|0x20 < 'a' || sql[0]|0x20 > 'z' || strings.IndexByte(sql, ';') >= 0 {
		return false
	}
	switch w := sqltok.FirstKeyword(sql, sqltok.MySQL); {
	case strings.EqualFold(w, "select"):
		return !strings.Contains(sql, "@") && !takesNamedLock(sql) // @@variables, @user variables
	case strings.EqualFold(w, "insert"), strings.EqualFold(w, "update"), strings.EqualFold(w, "delete"),
		strings.EqualFold(w, "replace"), strings.EqualFold(w, "with"):
		return !takesNamedLock(sql) && !namesUserVariable(sql)
	}
	return false
}

// handedOff counts an admission the loop handed to the goroutine to wait for; too many in a
// row keep the session off the loop for a while.
func (h *session) handedOff() {
	if h.loopHandOffs++; h.loopHandOffs >= loopHandOffsMax {
		h.loopHandOffs, h.loopBackoff = 0, loopBackoff
	}
}

// dropAdmitted reports an admission the loop handed over that no command took (the client
// went first).
func (h *session) dropAdmitted() {
	if adm := h.admitted; adm != nil {
		h.admitted, h.admittedReq = nil, nil
		adm.Finish(0, 0, context.Canceled)
	}
}

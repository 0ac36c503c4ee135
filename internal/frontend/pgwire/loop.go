package pgwire

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/node/proxy"
)

// The event loop (internal/relayloop): a client whose statements are forwarded to PostgreSQL
// engine connections (forward.go), both in plain TCP, is relayed in its steady state by the
// server's event loop instead of its goroutine. The loop's thread reads the client's simple
// Query, writes it to the engine connection and writes the engine's answer straight back,
// seeing only the messages the proxy must see: ReadyForQuery (the statement's end and its
// report; the transaction's end, when transaction pool mode gives the engine connection
// back), ErrorResponse, ParameterStatus and COPY. Rows are counted as they pass. A goroutine
// per connection instead pays a scheduler park and wake on each side of every message.
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
// and plugs the engine connection into the pair. Everything else (the extended protocol, statements
// that may change session state, guardrails on rows or bytes, a statement the core rewrote,
// COPY, an error to explain, a message while a statement runs): the goroutine takes the client
// and the engine connection back, with the bytes read but not relayed, and carries on as
// forward.go does.

// loopMissesMax is how many times a client may leave the loop at once (its next message was
// not a simple Query) before it is no longer put on it: the extended protocol would pay for
// the hand-over on every statement.
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
	rows   *relayloop.PG // the engine's direction: rows counted, ReadyForQuery watched
	sock   engine.PGWireSocket
	// busy: a statement was relayed and its ReadyForQuery has not come back; run is its
	// report (nil for none) and rows0, bytes0 the counts before it.
	busy          bool
	run           *wireRun
	rows0, bytes0 int64
	// unplugging: the transaction's engine connection leaves once its ReadyForQuery is
	// written; waiting: a client message is held until the statement or that ends.
	unplugging, waiting bool
	// Why the loop handed the client back, for the goroutine: miss (a message the loop does
	// not relay), refused (the core refused the held Query), resend (the held Query is to be
	// sent as this SQL by forward.go, with run).
	miss    bool
	refused error
	resend  string
}

// eventLoop is the server's loop, started on first use; nil where there is none.
func (s *Server) eventLoop() *relayloop.Loop {
	s.loopOnce.Do(func() {
		if s.opts.NoEventLoop {
			return
		}
		l, err := relayloop.New(0)
		if err != nil {
			s.log.Info("pgwire: no event loop; connections are relayed by goroutines", "err", err)
			return
		}
		s.loop = l
	})
	return s.loop
}

// loopListener accepts TCP connections as relayloop.Conns.
type loopListener struct{ net.Listener }

func (l loopListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok && err == nil {
		return relayloop.NewConn(tc), nil
	}
	return nc, err
}

// loopConnOf is nc's socket as a relayloop.Conn (under netlimit's wrapper), nil when it is
// none (TLS, a listener of another kind).
func loopConnOf(nc net.Conn) *relayloop.Conn {
	for range 2 {
		if lc, ok := nc.(*relayloop.Conn); ok {
			return lc
		}
		w, ok := nc.(interface{ NetConn() net.Conn })
		if _, isTLS := nc.(*tls.Conn); !ok || isTLS {
			return nil
		}
		nc = w.NetConn()
	}
	return nil
}

// LoopStatements is how many statements the event loop has relayed.
func (s *Server) LoopStatements() int64 { return s.loopStatements.Load() }

// LoopAdmissions is how many transactions the event loop admitted on its own thread.
func (s *Server) LoopAdmissions() int64 { return s.loopAdmissions.Load() }

// loopable reports whether the connection can go on the loop now: the client forwards to
// engine connections, nothing is half-done, and both sockets are plain TCP.
func (c *conn) loopable() bool {
	lc := c.lc
	if lc == nil || c.owner == 0 || c.session != nil || c.skipToSync || c.unwatch != nil ||
		c.loopMisses >= loopMissesMax || !c.lastWasQuery || c.srv.draining.Load() {
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
		Done:           func(res relayloop.Result) { lr.events <- loopEvent{done: &res} },
		MessageTimeout: c.srv.opts.Limits.MessageTimeout, // as the goroutine's clientReader
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
		for _, t := range []byte{'Z', 'E', 'S', 'G', 'W'} {
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

// admit opens a wire for the held Query sql and plugs its engine connection in; when it
// cannot, the loop hands the client back (the Query is then answered as dispatch would).
func (lr *loopRun) admit(sql string) {
	c := lr.c
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

// admitNow admits the held Query sql on the loop's thread when that needs no waiting, and
// plugs its engine connection in. Otherwise admitted is false and v says what the loop does
// with sql: Hold it for the goroutine's admit (an admission that would wait), or Pause
// (refused, or the frontend's own path).
func (lr *loopRun) admitNow(sql string) (v relayloop.Verdict, admitted bool) {
	c := lr.c
	ok, err := c.openWireWith(sql, true)
	switch {
	case errors.Is(err, engine.ErrWouldWait):
		lr.events <- loopEvent{admit: sql}
		return relayloop.Hold, false
	case err != nil || !ok:
		lr.refused, lr.miss = err, err == nil
		return relayloop.Pause, false
	}
	sock, isSock := c.wire.conn.(engine.PGWireSocket)
	fd := -1
	if isSock {
		fd, isSock = sock.LendSocket()
	}
	if !isSock || lr.h.Plug(fd) != nil {
		lr.miss = true // the goroutine forwards it on the wire it has now
		return relayloop.Pause, false
	}
	lr.sock = sock
	c.setEngineCancel()
	c.srv.loopAdmissions.Add(1)
	c.loopHandOffs = 0
	return relayloop.Relay, true
}

// setEngineCancel makes a CancelRequest cancel what runs on the wire's engine connection.
func (c *conn) setEngineCancel() {
	cancel := c.wire.conn.Cancel
	c.runMu.Lock()
	c.runCancel = func() { go cancel() }
	c.runMu.Unlock()
}

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
	if msg[0] != 'Q' || len(msg) < 6 {
		lr.miss = true
		return relayloop.Pause
	}
	sql := string(msg[5 : len(msg)-1])
	if mayHoldSessionState(sql) || strings.TrimSpace(sql) == "" {
		return relayloop.Pause // SETs answered here, refused for the pool mode, an empty Query
	}
	if w := firstWord(sql); strings.EqualFold(w, "deallocate") || strings.EqualFold(w, "discard") {
		return relayloop.Pause
	}
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
	c.srv.loopStatements.Add(1)
	lr.sock.Relayed('Q')
	lr.busy, lr.run = true, run
	lr.rows0, lr.bytes0 = lr.rows.Count, lr.rows.Bytes
	return relayloop.Relay
}

func (lr *loopRun) fromEngine(msg []byte) relayloop.Verdict {
	c := lr.c
	switch msg[0] {
	case 'Z':
		if !lr.busy || len(msg) != 6 {
			return relayloop.Pause // out of turn: forward.go reports it
		}
		lr.busy = false
		lr.count()
		c.txStatus = msg[5]
		lr.sock.Ready(msg[5])
		c.finishRun(lr.run, nil)
		lr.run = nil
		if c.txStatus == 'I' {
			clear(c.wire.portals)
			if c.srv.draining.Load() {
				return relayloop.End
			}
			if c.wire.w.PoolMode == proxy.PoolModeTransaction {
				lr.unplugging = true
				return relayloop.Unplug
			}
		}
		lr.resumeHeld()
		return relayloop.Relay
	case 'E':
		if run := lr.run; lr.busy && run != nil {
			if run.r.Ctx.Err() != nil && !run.closed {
				return relayloop.Pause // the core's cancel: forward.go explains it
			}
			if run.err == nil {
				run.err = errorOf(msg)
			}
		}
		return relayloop.Relay
	case 'S':
		c.noteParameter(msg)
		return relayloop.Relay
	}
	return relayloop.Pause // COPY from the client, CopyBoth: forward.go's
}

// count moves the rows counted since the statement began into its report.
func (lr *loopRun) count() {
	if run := lr.run; run != nil {
		rows := lr.rows.Count - lr.rows0
		run.rows, run.bytes = rows, lr.rows.Bytes-lr.bytes0-7*rows
	}
}

// unplugged gives the transaction's engine connection back (transaction pool mode), on the
// loop's thread: the pool's and the slot's bookkeeping, neither of which waits.
func (lr *loopRun) unplugged(_ int, rest []byte) {
	c := lr.c
	if len(rest) > 0 {
		c.wire.conn.Discard() // the server spoke after ReadyForQuery, unasked
	}
	c.runMu.Lock()
	c.runCancel = nil
	c.runMu.Unlock()
	c.closeWire()
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
	c.lastWasQuery = false // the goroutine takes the next message, whatever it is
	c.endRun()             // the engine's cancel: set again by whatever runs next
	if lr.miss {
		c.loopMisses++
	}
	toClient := res.Leftover[relayloop.BToA]
	if n := res.Scanned[relayloop.BToA]; n > 0 { // relayed as far as the loop is concerned
		c.be.Send(rawMessage(toClient[:n]))
		toClient = toClient[n:]
	}
	if errors.Is(res.Err, relayloop.ErrMessageTimeout) {
		return c.loopMessageTimeout(lr, res)
	}
	if res.Scanned[relayloop.AToB] > 0 || res.Remaining[relayloop.BToA] > 0 {
		// Stopped half-way through a message (never at a Pause): nothing can pick it up.
		if c.wire != nil {
			c.wire.conn.Discard()
		}
		return &ioError{errors.New("the event loop stopped in the middle of a message")}
	}
	c.cr.ahead = append(res.Leftover[relayloop.AToB], c.cr.ahead...)
	if c.wire != nil && lr.sock != nil {
		lr.sock.Unread(toClient)
	}
	switch {
	case res.Err != nil && res.Side == relayloop.BToA && !res.Paused && !errors.Is(res.Err, relayloop.ErrStopped):
		// The engine connection ended or failed: as forward.go's wireError.
		if c.wire == nil {
			return nil
		}
		c.wire.conn.Discard()
		c.wire.broken = true
		if !lr.busy {
			return nil
		}
		lr.count()
		c.finishRun(lr.run, res.Err)
		return c.fatal(sqlstate.ConnectionFailure, fmt.Sprintf("lost the connection to the engine of cluster %s: %v", c.wire.w.Cluster, res.Err))
	case res.Err != nil && !res.Paused && !errors.Is(res.Err, relayloop.ErrStopped):
		return &ioError{res.Err} // the client's end
	}
	ws := c.wire
	if lr.busy {
		// A statement still runs: forward.go relays the rest of its answer.
		lr.count()
		ws.queue = append(ws.queue, expect{kind: 'Q', run: lr.run})
		err := c.forwardFailed(ws, &pgproto3.Query{}, c.pump())
		c.releaseIfIdle(ws)
		return err
	}
	if lr.refused == nil && lr.resend == "" {
		return c.flush()
	}
	// The held Query is answered here: take it off what the client sent.
	q := c.cr.ahead
	if len(q) < 5 || q[0] != 'Q' {
		return fmt.Errorf("pgwire: the loop handed back no Query (%d bytes)", len(q))
	}
	c.cr.ahead = q[1+int(binary.BigEndian.Uint32(q[1:5])):]
	if lr.refused != nil {
		err := c.refuseMessage(&pgproto3.Query{}, c.runError(lr.refused))
		if ws != nil {
			c.releaseIfIdle(ws)
		}
		return err
	}
	ws.unnamed = ""
	c.forgetOnDiscard(lr.resend)
	c.send(&pgproto3.Query{String: lr.resend}, expect{kind: 'Q', run: lr.run})
	err := c.forwardFailed(ws, &pgproto3.Query{}, c.pump())
	c.releaseIfIdle(ws)
	return err
}

// loopMessageTimeout ends a client that left a message half sent on the loop, as
// receiveFailed does on the goroutine; a statement still running is cancelled with its engine
// connection.
func (c *conn) loopMessageTimeout(lr *loopRun, res relayloop.Result) error {
	err := netlimit.MessageTimeoutError(c.srv.opts.Limits.MessageTimeout)
	if c.wire != nil && lr.busy {
		c.wire.conn.Discard()
		lr.count()
		c.finishRun(lr.run, err)
	}
	if res.Remaining[relayloop.BToA] > 0 {
		return &ioError{err} // the client is in the middle of an engine's message: no FATAL fits
	}
	return c.receiveFailed(err)
}

// idle reports, on the loop's thread, whether the client sits between statements outside a
// transaction (Drain ends it then).
func (lr *loopRun) idle() bool {
	return !lr.busy && !lr.unplugging && lr.c.txStatus == 'I'
}

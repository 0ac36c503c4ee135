package mysqlengine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/relayloop"
)

// Loop connections: the MySQL frontend's event loop (internal/relayloop) writes a client's
// COM_QUERY to an engine connection's socket itself and relays the engine's packets straight
// back, byte for byte. The client must then get the packets it expects from the frontend,
// which never offers CLIENT_DEPRECATE_EOF (go-mysql's server cannot) and takes no query
// attributes: so a loop connection is opened without CLIENT_DEPRECATE_EOF (its result sets
// end with EOF packets), and only to a server without query attributes. go-mysql's client
// decodes results by what the server offered rather than by what was agreed, so it must never
// read a result on one: loop connections are pooled apart from the others (they share
// MaxConns), and only this file and the frontend's loop speak on them. Only plain TCP
// connections qualify: the loop reads and writes the socket.

// ErrNoLoop is OpenLoopConn's answer for an engine whose connections cannot go on an event
// loop (TLS, compression, a server that takes query attributes).
var ErrNoLoop = errors.New("mysqlengine: this engine's connections cannot be relayed by an event loop")

// LoopConn is a loop connection taken from the pool for one statement: Begin before the
// statement is written, then Release. Kill may come from any goroutine.
type LoopConn struct {
	e      *Engine
	c      *client.Conn
	sock   *relayloop.Conn
	state  atomic.Int32 // loopIdle, loopRunning or loopKilled
	killed onceKill     // the running statement's kill (a killed connection is not reused)
	// taken is when it was last taken from the pool (loopClock), and idleSince when it went
	// back: the time it was taken, the start of its last statement, not of its idle time (one
	// clock read a statement less; the check runs earlier after a long statement, never later).
	taken, idleSince time.Duration
	flags            connFlags // flagsOf(c), read once: its pool list, at every give-back
	// holder keeps it between statements (loophold.go; under e.mu), nil while it is not
	// kept; used says a statement ran on it since the last sweep of held connections.
	holder Holder
	used   atomic.Bool
}

// loopCheckIdleAfter is how long a loop connection may sit idle before it is checked (one
// peek) for an end or a message the server sent meanwhile, before it serves a statement: a
// connection the server closed would otherwise fail the statement half-way.
const loopCheckIdleAfter = time.Second

// loopClock is the monotonic clock a loop connection's idle time is read on: one clock read
// (time.Now reads the wall clock too), at every statement's take.
func loopClock() time.Duration { return time.Since(loopEpoch) }

var loopEpoch = time.Now()

const (
	loopIdle int32 = iota
	loopRunning
	loopKilled // a KILL QUERY was sent: the connection is not reused
)

// Loopable reports whether the engine's connections may go on an event loop, as far as
// is known (OpenLoopConn finds out for sure).
func (e *Engine) Loopable() bool { return e.cfg.TLS == nil && !e.noLoop.Load() }

// TakeLoopConn takes an idle loop connection in q's database, without waiting: nil when
// there is none (or no connection slot free). Release gives it back.
func (e *Engine) TakeLoopConn(q *query.Request) *LoopConn {
	flags := e.requestFlags(q)
	if !loopServes(q, flags) {
		return nil
	}
	if !e.slots.tryTake() {
		return nil
	}
	db := requestDatabase(q)
	e.mu.Lock()
	idle := e.loopIdle[flags]
	for i := len(idle) - 1; i >= 0 && !e.closed; i-- {
		lc := idle[i]
		if db != "" && db != lc.c.GetDB() {
			continue
		}
		idle = append(idle[:i], idle[i+1:]...)
		e.loopIdle[flags] = idle
		if lc.taken = loopClock(); lc.taken-lc.idleSince < loopCheckIdleAfter || !lc.sock.Pending() {
			e.mu.Unlock()
			return lc
		}
		go lc.c.Close() // closed by the server, or it spoke unasked
	}
	e.mu.Unlock()
	e.slots.give()
	return nil
}

// OpenLoopConn takes a loop connection in q's database, waiting for a connection slot and
// opening one when none is idle. It answers ErrNoLoop for an engine that has none.
func (e *Engine) OpenLoopConn(ctx context.Context, q *query.Request) (*LoopConn, error) {
	flags := e.requestFlags(q)
	if !e.Loopable() || !loopServes(q, flags) {
		return nil, ErrNoLoop
	}
	if err := e.slots.take(ctx); err != nil {
		return nil, err
	}
	db := requestDatabase(q)
	e.mu.Lock()
	var lc *LoopConn
	if n := len(e.loopIdle[flags]); n > 0 && !e.closed {
		lc = e.loopIdle[flags][n-1]
		e.loopIdle[flags] = e.loopIdle[flags][:n-1]
	}
	e.mu.Unlock()
	if lc == nil {
		var err error
		if lc, err = e.dialLoop(ctx, flags); err != nil {
			e.slots.give()
			return nil, err
		}
	}
	lc.taken = loopClock()
	if db != "" && db != lc.c.GetDB() {
		if err := lc.c.UseDB(db); err != nil {
			lc.Release(false)
			return nil, e.wrap(err)
		}
	}
	return lc, nil
}

// dialLoop opens a loop connection with flags.
func (e *Engine) dialLoop(ctx context.Context, flags connFlags) (*LoopConn, error) {
	var sock *relayloop.Conn
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := e.handshakeDialer(ctx, network, addr)
		if tc, ok := nc.(*net.TCPConn); ok && err == nil {
			sock = relayloop.NewConn(tc)
			return sock, nil
		}
		return nc, err
	}
	c, err := e.dialWith(ctx, dialer, flags, func(c *client.Conn) error {
		c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if flags&flagExtendedMetadata != 0 && !hasMetadata(c) {
		_ = c.Close() // the server has no extended metadata after all: the goroutine relays
		return nil, ErrNoLoop
	}
	if sock == nil || c.Compression != mysql.MYSQL_COMPRESS_NONE || strings.Contains("|"+c.CapabilityString()+"|", "|CLIENT_QUERY_ATTRIBUTES|") {
		e.noLoop.Store(true)
		_ = c.Close()
		return nil, ErrNoLoop
	}
	return &LoopConn{e: e, c: c, sock: sock, flags: flagsOf(c)}, nil
}

// loopServes reports whether a loop connection opened with flags can serve q: one for a client
// that asked for extended metadata must have it, since the loop relays its column definitions
// as they are.
func loopServes(q *query.Request, flags connFlags) bool {
	return !q.ExtendedMetadata || flags&flagExtendedMetadata != 0
}

// Lend takes the socket out of Go's poller for the loop (relayloop.Conn.Lend); ok is false
// when it cannot be.
func (lc *LoopConn) Lend() (fd int, ok bool) {
	fd, err := lc.sock.Lend()
	return fd, err == nil
}

// Begin marks a statement running: from now until Release, Kill stops it on the server.
func (lc *LoopConn) Begin() { lc.state.Store(loopRunning) }

// Kill asks the server to stop the statement running on the connection (KILL QUERY from
// another connection), once, and only while one runs; the connection is then not reused. It
// does not wait: Release gives the slot back only once the statement is gone.
func (lc *LoopConn) Kill() {
	if lc.state.CompareAndSwap(loopRunning, loopKilled) {
		go lc.kill()
	}
}

func (lc *LoopConn) kill() { lc.killed.kill(lc.e, lc.c) }

// Abandon stops the statement whose answer was left half-relayed (its client went, or the loop
// stopped in the middle of it), closes the connection and gives its slot back once the
// statement is gone. Call it off the loop, with the connection out of the loop's pair: it
// waits for the server.
func (lc *LoopConn) Abandon() {
	lc.state.Store(loopKilled)
	// Closed first, as nothing will read the rest: a server thread blocked writing it fails at
	// once rather than stay listed until its write times out. The loop let the socket go.
	_ = lc.sock.Close()
	lc.kill()
	lc.giveBack(false)
}

// Release gives the connection back after its statement (healthy: its answer was read to the
// end and it left no session state behind), or closes it; it never waits. The slot of a
// connection whose statement was killed comes back once the kill is done.
func (lc *LoopConn) Release(healthy bool) {
	if lc.state.Swap(loopIdle) == loopKilled {
		go func() {
			lc.kill() // done already, or on its way: waited for
			lc.giveBack(false)
		}()
		return
	}
	lc.giveBack(healthy)
}

// giveBack pools the connection (healthy) or closes it, and frees its slot.
func (lc *LoopConn) giveBack(healthy bool) {
	e, flags := lc.e, lc.flags
	e.mu.Lock()
	e.unhold(lc)
	if healthy && !e.closed && len(e.loopIdle[flags]) < idleConnsMax {
		lc.idleSince = lc.taken
		e.loopIdle[flags] = append(e.loopIdle[flags], lc)
		e.mu.Unlock()
		e.slots.give()
		return
	}
	e.mu.Unlock()
	e.slots.give()
	go lc.c.Close()
}

// Error is the error an engine's ERR packet (its payload) stands for, wrapped as Execute
// wraps the engine's errors.
func (lc *LoopConn) Error(payload []byte) error {
	return lc.e.wrap(lc.c.HandleErrorPacket(bytes.Clone(payload)))
}

// Lost is the error of the statement whose connection ended under it (cause: how that was
// seen), wrapped as Execute wraps a broken connection's.
func (lc *LoopConn) Lost(cause error) error {
	return lc.e.wrap(fmt.Errorf("%w: %w", mysql.ErrBadConn, cause))
}

// Warnings reads the warnings of the statement that just ran (SHOW WARNINGS), off the loop:
// it waits for the server. ok is false when the connection failed doing so (Release it
// unhealthy).
func (lc *LoopConn) Warnings() (ws []Warning, ok bool) { return warningsOf(lc.e, lc.c, true) }

// warningsOf reads c's warnings (SHOW WARNINGS) as the relay reads a result: go-mysql cannot
// read the column definitions of a connection with extended metadata. ok is false when c
// failed doing so; classicEOF is RawQuery's.
func warningsOf(e *Engine, c *client.Conn, classicEOF bool) (ws []Warning, ok bool) {
	r := &RawQuery{e: e, conn: c, sql: "SHOW WARNINGS", buf: getRelayBuffers(), classicEOF: classicEOF}
	defer putRelayBuffers(r.buf)
	if err := r.start(r.queryPacket()); err != nil || r.engineErr != nil || r.columns == nil {
		return nil, false
	}
	row := make([]byte, 4, 256)
	for {
		p, more := r.NextRow(row[:4])
		if !more {
			break
		}
		row = p
		var f [3][]byte
		rest := p[4:]
		for i := range f {
			v, isNull, n, err := mysql.LengthEncodedString(rest)
			if err != nil || isNull {
				return nil, false
			}
			f[i], rest = v, rest[n:]
		}
		code, _ := strconv.ParseUint(string(f[1]), 10, 16)
		ws = append(ws, Warning{Level: string(f[0]), Code: uint16(code), Message: string(f[2])})
	}
	c.Sequence = r.seq
	return ws, r.done && r.err == nil && r.engineErr == nil && !r.buf.buffered()
}

// closeLoopIdle closes the idle loop connections (Engine.Close).
func (e *Engine) closeLoopIdle(idle []*LoopConn) {
	for _, lc := range idle {
		_ = lc.c.Close()
	}
}

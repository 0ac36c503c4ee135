package pgengine

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/relayloop"
)

// The relay's connections (engine.PGWire, wire.go): pgconn opens them (TLS, authentication)
// and hands them over with Hijack, after which the socket is the relay's alone: statements are
// written as wire messages and the answers read message by message, never decoded. Idle
// connections wait in rawPool; how many are open, here and in the pgx pool together, is the
// engine's budget (budget.go).

const (
	rawReadBufferBytes = 32 << 10
	// rawMessageBytesMax bounds one engine message (PostgreSQL's own limit is 1 GiB).
	rawMessageBytesMax = 1 << 30
	// rawCheckIdleAfter is how long a connection may sit idle before it is checked for a
	// message the server sent meanwhile (a shutdown notice): cheaper than a round trip.
	rawCheckIdleAfter = time.Second
	// rawCancelGrace is how long a cancelled statement may take to answer before its
	// connection is abandoned.
	rawCancelGrace = 10 * time.Second
	// A cancelled statement that has not answered after cancelResendFirst is sent the cancel
	// request again, then after twice as long each time, up to cancelResendMax apart:
	// PostgreSQL drops a request that lands while the backend waits for a message.
	cancelResendFirst = 50 * time.Millisecond
	cancelResendMax   = time.Second
	// rawStatementsMax bounds the statements one connection keeps prepared for clients'
	// named statements; past it, executions run unnamed (parsed each time).
	rawStatementsMax = 256
	// rawStatementBytesMax bounds their texts together: the connection outlives the clients
	// that prepared them (256 statements of 16 MiB would pin 4 GiB in a pooled connection
	// after every client left). A statement past it runs unnamed too.
	rawStatementBytesMax = 4 << 20
)

var errRawProtocol = errors.New("pgengine: relay: unexpected message from the server")

// rawOutKeptBytes is the largest write buffer a connection keeps once written: a pooled
// connection outlives the client whose 64 MiB message went through it.
const rawOutKeptBytes = 64 << 10

// written empties c.out once it was written, letting a large one go.
func (c *rawConn) written() {
	c.out = c.out[:0]
	if cap(c.out) > rawOutKeptBytes {
		c.out = nil
	}
}

// rawClock is the monotonic clock alone, for idle times: time.Now reads the wall clock too, a
// second clock read that every transaction's give-back paid for nothing.
func rawClock() time.Duration { return time.Since(rawEpoch) }

var rawEpoch = time.Now() //determinism:ok a monotonic base for idle times: they are compared with each other only

// rawPool keeps the relay's idle connections, last in first out.
type rawPool struct {
	cfg  *pgconn.Config
	mu   sync.Mutex
	idle []*rawConn
	shut bool
	// returned is closed when a connection comes back idle, for whoever waits for one: made
	// when a get finds none idle and dropped once closed, so that giving a connection back
	// (every transaction) makes nothing.
	returned chan struct{}
	// mustWait says a new connection could only be had by closing one of this pool's: the
	// budget is spent and the pgx pool has none idle. Then get waits for a connection to come
	// back rather than close one it is about to return and open another.
	mustWait func() bool
	// waiting, when set, is called each time get starts such a wait (tests).
	waiting func()
	// holds are the connections kept by frontends' loops between their owners' transactions
	// (hold.go).
	holds holds
	// cancelSent, when set (tests), is called after each cancel request its connections send.
	cancelSent func()
	zone       *serverZone // where each new connection notes the server's TimeZone (zone.go)
}

func newRawPool(cfg *pgconn.Config) *rawPool {
	// A plain TCP connection can be lent to a frontend's event loop (engine.PGWireSocket).
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if tc, ok := nc.(*net.TCPConn); ok && err == nil {
			return relayloop.NewConn(tc), nil
		}
		return nc, err
	}
	return &rawPool{cfg: cfg, mustWait: func() bool { return false }}
}

// get takes an idle connection, preferring one that last served owner (it need not be reset),
// or opens one.
func (p *rawPool) get(ctx context.Context, owner uint64) (*rawConn, error) {
	var retry retryTimer
	defer retry.stop()
	for {
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			return nil, errors.New("pgengine: the engine is closed")
		}
		n := len(p.idle)
		if n == 0 {
			if p.returned == nil {
				p.returned = make(chan struct{})
			}
			returned := p.returned
			p.mu.Unlock()
			if !p.mustWait() {
				break
			}
			// Counted before the holders are asked (hold.go: no waiter missed).
			p.holds.waiting.Add(1)
			p.reclaimHeld()
			err := p.awaitReturn(ctx, returned, &retry)
			p.holds.waiting.Add(-1)
			if err != nil {
				return nil, err
			}
			continue
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
		if rawClock()-c.idleSince < rawCheckIdleAfter || c.quiet() {
			return c, nil
		}
		c.close()
	}
	return p.open(ctx)
}

// awaitReturn waits until a connection comes back (returned closes), a budget token may have
// come free (retry fires), or ctx ends.
func (p *rawPool) awaitReturn(ctx context.Context, returned chan struct{}, retry *retryTimer) error {
	if p.waiting != nil {
		p.waiting()
	}
	select {
	case <-returned:
	case <-retry.start():
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// open connects with pgconn and takes the connection over.
func (p *rawPool) open(ctx context.Context) (*rawConn, error) {
	pc, err := pgconn.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return nil, err
	}
	if err := pc.SyncConn(ctx); err != nil { // nothing of the server's left in pgconn's buffer
		_ = pc.Close(ctx)
		return nil, err
	}
	if p.zone != nil {
		p.zone.note(pc)
	}
	hc, err := pc.Hijack()
	if err != nil {
		_ = pc.Close(ctx)
		return nil, err
	}
	c := &rawConn{nc: hc.Conn, buf: make([]byte, rawReadBufferBytes), txStatus: hc.TxStatus, stmts: map[string]string{},
		cancel: newCanceller(hc)}
	c.cancel.sent = p.cancelSent
	c.sock, _ = withoutBudget(hc.Conn).(*relayloop.Conn)
	return c, nil
}

// getReady takes, without waiting, an idle connection that can serve owner at once: it last
// served owner and carries its setup (no reset, no setup), carries tag (no retag) and is known
// quiet. nil when there is none.
func (p *rawPool) getReady(owner uint64, tag, setup string) *rawConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for j := len(p.idle) - 1; j >= 0 && !p.shut; j-- {
		c := p.idle[j]
		if c.owner != owner || !c.used || !c.tagged || c.tag != tag || c.setup != setup {
			continue
		}
		if rawClock()-c.idleSince >= rawCheckIdleAfter && !c.quiet() {
			return nil // the goroutine's get closes it and opens another
		}
		p.idle = append(p.idle[:j], p.idle[j+1:]...)
		return c
	}
	return nil
}

// put takes c back, or closes it when it cannot serve another statement. A connection its
// client left mid-statement is cancelled and read to its ReadyForQuery first (cancelAndAwait)
// and can then serve another: its cancel request was answered before that ReadyForQuery was
// read, so it cannot reach a later statement. One cancelled on another goroutine (Cancel)
// is not taken back: that request may still be on its way (wireConn.Close).
func (p *rawPool) put(c *rawConn) {
	if c.holder != nil {
		p.mu.Lock()
		p.unhold(c)
		p.mu.Unlock()
	}
	if !c.broken && (c.awaitZ != 0 || c.unsynced) && !c.cancelAndAwait() {
		c.broken = true
		_ = c.nc.Close()
		return
	}
	if c.broken || c.txStatus != 'I' || c.awaitZ != 0 || c.unsynced {
		c.close()
		return
	}
	c.idleSince = rawClock()
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		c.close()
		return
	}
	p.idle = append(p.idle, c)
	if p.returned != nil {
		close(p.returned)
		p.returned = nil
	}
	p.mu.Unlock()
}

// hasIdle says a connection is idle (closeIdle would free a token of the budget), or kept by
// a holder that gives it back when asked (hold.go).
func (p *rawPool) hasIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0 || len(p.holds.by) > 0
}

// closeIdle closes the connection idle longest, for the budget; false when none is idle.
func (p *rawPool) closeIdle() bool {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.mu.Unlock()
		return false
	}
	c := p.idle[0]
	p.idle = p.idle[1:]
	p.mu.Unlock()
	c.close()
	return true
}

func (p *rawPool) close() {
	p.holds.shut.Store(true)
	p.mu.Lock()
	idle := p.idle
	p.idle, p.shut = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	p.reclaimHeld() // given back, they are closed (put)
}

// rawConn is one relay connection: a socket pgconn opened and let go of.
type rawConn struct {
	nc        net.Conn
	sock      *relayloop.Conn // nc's plain TCP socket, which an event loop may relay; nil for TLS
	cancel    *canceller
	buf       []byte // buf[r:w] is read and not yet consumed
	r, w      int
	out       []byte
	txStatus  byte
	broken    bool
	idleSince time.Duration // rawClock() when it last went idle
	// stmts maps a client statement (its SQL and declared parameter types) to the name it is
	// prepared under on this connection.
	stmts     map[string]string
	stmtBytes int // of the keys of stmts
	prepared  int // statements named so far: names are never reused
	// owner is the client the connection served last (0: none yet): another client gets it
	// only after a reset (wire.go).
	owner uint64
	used  bool   // served a client since it was opened
	setup string // the owner's setup (PGWireOptions.Setup) the connection was given last
	// awaitZ counts Syncs and Queries sent whose ReadyForQuery is not read yet; unsynced says
	// extended-protocol messages were sent since the last Sync. Either makes the connection
	// unfit for another client.
	awaitZ   int
	unsynced bool
	rawTag   // the capacity lease tag (tag.go)
	// holder keeps the connection between its owner's transactions (hold.go; under the pool's
	// mu), nil while it is not kept; holdUsed says it served a transaction since the sweep
	// last looked.
	holder   engine.PGWireHolder
	holdUsed atomic.Bool
}

// terminate is PostgreSQL's Terminate message.
var terminate = []byte{'X', 0, 0, 0, 4}

func (c *rawConn) close() {
	if c.awaitZ > 0 || c.unsynced {
		// Mid-statement: closing the socket alone leaves the backend running until it next
		// talks to us (PostgreSQL does not notice a closed socket while it sleeps or scans).
		c.cancelAndAwait()
		c.broken = true
	}
	if !c.broken {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.nc.Write(terminate)
	}
	_ = c.nc.Close()
}

// cancelAndAwait stops what the connection runs: a cancel request, then the server's answers
// read up to the ReadyForQuery of everything sent (a Sync sent first after extended-protocol
// messages that had none), for at most cancelWaitMax, as pgengine's own statements are
// cancelled. The caller frees the statement's slot next: it must be free on the engine too.
// While the statement does not answer, the request is sent again (cancelResendFirst, then twice
// as long each time up to cancelResendMax): PostgreSQL drops one that lands while the backend
// waits for the client's next message (a statement still on its way to it, the next message of
// an extended-protocol exchange), and the statement then runs to its end. Nothing else is sent
// meanwhile, so a request sent again cannot reach a later statement.
// drained reports that the connection is idle again, its deadline cleared.
func (c *rawConn) cancelAndAwait() (drained bool) {
	err := c.cancel.sendWithinGrace()
	deadline := time.Now().Add(cancelWaitMax)
	if err != nil || c.nc.SetDeadline(deadline) != nil {
		return false
	}
	if c.unsynced {
		c.out = append(c.out[:0], 'S', 0, 0, 0, 4)
		err := c.write()
		c.out = c.out[:0]
		if err != nil {
			return false
		}
		c.awaitZ++
		c.unsynced = false
	}
	pause := cancelResendFirst
	if c.nc.SetReadDeadline(earlier(deadline, time.Now().Add(pause))) != nil {
		return false
	}
	for c.awaitZ > 0 {
		msg, err := c.next()
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !time.Now().Before(deadline) {
				return false
			}
			if c.cancel.sendWithinGrace() != nil { // the statement runs on: the request again
				return false
			}
			pause = min(2*pause, cancelResendMax)
			if c.nc.SetReadDeadline(earlier(deadline, time.Now().Add(pause))) != nil {
				return false
			}
			continue
		}
		if msg[0] == 'Z' {
			c.awaitZ--
			c.txStatus = msg[len(msg)-1]
		}
	}
	return c.nc.SetDeadline(time.Time{}) == nil
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
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
	n, err := c.nc.Read(c.buf[c.w:])
	c.w += n
	if err != nil && n == 0 {
		return err
	}
	return nil
}

func (c *rawConn) write() error {
	_, err := c.nc.Write(c.out)
	return err
}

// canceller sends cancel requests for a connection pgconn let go of (its CancelRequest is
// pgconn's no more), as pgconn does: to the address the connection reached, encrypted like
// it.
type canceller struct {
	dial             pgconn.DialFunc
	network, address string
	tls              *tls.Config // nil: plaintext
	directTLS        bool
	pid              uint32
	key              []byte
	sent             func() // called after each request (tests: rawPool.cancelSent)
}

func newCanceller(hc *pgconn.HijackedConn) *canceller {
	k := &canceller{dial: hc.Config.DialFunc, tls: hc.TLSConfig, directTLS: hc.Config.SSLNegotiation == "direct", pid: hc.PID, key: hc.SecretKey}
	if addr := hc.Conn.RemoteAddr(); addr.Network() != "unix" {
		k.network, k.address = addr.Network(), addr.String()
	} else { // the name the server bound, relative: the configured one is dialled instead
		k.network, k.address = pgconn.NetworkAddress(hc.Config.Host, hc.Config.Port)
	}
	return k
}

// sendWithinGrace sends one cancel request, giving up after rawCancelGrace.
func (k *canceller) sendWithinGrace() error {
	ctx, cancel := context.WithTimeout(context.Background(), rawCancelGrace)
	defer cancel()
	err := k.send(ctx)
	if k.sent != nil {
		k.sent()
	}
	return err
}

// sslRequest asks the server to start TLS.
var sslRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// send sends one cancel request and waits for the server to close it.
func (k *canceller) send(ctx context.Context) error {
	nc, err := k.dial(ctx, k.network, k.address)
	if err != nil {
		return err
	}
	defer func() { _ = nc.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	if k.tls != nil {
		if !k.directTLS {
			var answer [1]byte
			if _, err := nc.Write(sslRequest); err != nil {
				return err
			}
			if _, err := io.ReadFull(nc, answer[:]); err != nil {
				return err
			}
			if answer[0] != 'S' {
				return errors.New("pgengine: the server refused TLS for a cancel request")
			}
		}
		nc = tls.Client(nc, k.tls)
	}
	req := make([]byte, 12+len(k.key))
	binary.BigEndian.PutUint32(req[0:4], uint32(len(req)))
	binary.BigEndian.PutUint32(req[4:8], 80877102) // the cancel request code
	binary.BigEndian.PutUint32(req[8:12], k.pid)
	copy(req[12:], k.key)
	if _, err := nc.Write(req); err != nil {
		return err
	}
	_, _ = nc.Read(req) // the server closes the connection once it has the request
	return nil
}

// unwrapped is the socket under nc's wrappers (the budget's, TLS's).
func unwrapped(nc net.Conn) net.Conn {
	for {
		w, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nc
		}
		nc = w.NetConn()
	}
}

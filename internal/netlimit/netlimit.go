// Package netlimit bounds what a listener lets in before anyone is authenticated: how many
// connections are open at once (each further one is refused with the protocol's own error and
// closed at once, so refused clients hold nothing), how long a handshake may take, and how large
// a message may be before login; and, once a client is in, how large one message may be and how
// long it may take to arrive once begun (so a client dribbling a message, or leaving half of one,
// holds no memory or connection for long). The frontends and the admin / worker API listeners share it,
// and the frontends count there what they refuse at their own bounds after login.
//
// It touches the connections it is given (a refusal writes a few bytes and closes) and the
// metrics registry it is given.
//
// determinism: outside the simulator (network listeners)
package netlimit

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/heldmem"
)

// Defaults, used where a Limits field is zero.
const (
	// ConnectionsMaxDefault is the open connections one listener accepts.
	ConnectionsMaxDefault = 1000
	// HandshakeTimeoutDefault bounds a connection's handshake and login.
	HandshakeTimeoutDefault = 10 * time.Second
	// IdleTimeoutDefault closes an HTTP keep-alive connection left without a request, or a
	// gRPC connection without a call, so idle connections do not hold the connection cap.
	IdleTimeoutDefault = 2 * time.Minute
	// PreAuthBytesMaxDefault bounds one client message before login: a MySQL handshake
	// response, a PostgreSQL startup or password message, an HTTP request body.
	PreAuthBytesMaxDefault = 64 << 10
	// MessageBytesMaxDefault bounds one client message after login: a PostgreSQL message, a
	// MySQL command (all its packets together).
	MessageBytesMaxDefault = 64 << 20
	// MessageTimeoutDefault bounds how long a client message (an HTTP request body) may take to
	// arrive whole once its first bytes have.
	MessageTimeoutDefault = 30 * time.Second
	// WriteStallTimeoutDefault bounds how long an answer's write may make no progress (a
	// client that stopped reading) on the PostgreSQL and MySQL frontends: MariaDB's own
	// net_write_timeout.
	WriteStallTimeoutDefault = 60 * time.Second
	// KeepaliveTimeDefault is how long a Flight SQL (gRPC) connection may send nothing before
	// the server pings it, and KeepaliveTimeoutDefault how long the server then waits for the
	// ping's answer before it closes the connection: a client whose network went silent (no
	// FIN, no RST) is dropped, with its calls, their engine queries and slots, within about
	// their sum. A live client answers a ping whatever it is doing (the answer is its gRPC
	// library's, not its code's), so only a silent peer is dropped.
	KeepaliveTimeDefault    = 60 * time.Second
	KeepaliveTimeoutDefault = 20 * time.Second
	// refuseWriteTimeout bounds the write of a refusal; a fresh socket's send buffer takes it
	// at once, so this only matters for a peer that never reads.
	refuseWriteTimeout = time.Second
	// A refused connection is read (and what it sent dropped) for up to lingerTimeout before it
	// closes: closing with unread bytes would reset it, and the reset can overtake the refusal.
	// At most lingerMax refusals linger at once per listener; more are closed at once.
	lingerTimeout  = time.Second
	lingerBytesMax = 64 << 10
	lingerMax      = 64
)

// Limits are one listener's bounds. The zero value means the defaults.
type Limits struct {
	ConnectionsMax   int
	HandshakeTimeout time.Duration
	PreAuthBytesMax  int
	IdleTimeout      time.Duration
	MessageBytesMax  int
	MessageTimeout   time.Duration
	// SourceConnectionsMax is one source address's share of ConnectionsMax: its connections
	// not yet logged in (PerSource); default a quarter of ConnectionsMax, at least 4.
	SourceConnectionsMax int
	// HeldBytesMax bounds what one logged-in connection leaves in the daemon between its
	// messages (prepared statements, portals, data sent ahead: heldmem), Held what all of the
	// daemon's connections hold together; one Held is shared by every frontend of a node.
	HeldBytesMax int64
	Held         *heldmem.Pool
	// InFlight bounds the logged-in clients' messages held whole while they arrive, all
	// connections of a node together; apart from Held, so that a message never finds its room
	// taken by what its own connection holds.
	InFlight *heldmem.Pool
	// WriteStallTimeout bounds how long a write to a logged-in PostgreSQL or MySQL client may
	// make no progress (the client took and acknowledged nothing): past it the connection
	// ends, its engine query with it (BoundWrites, WriteStalled). On Flight SQL, how long one
	// message of a stream may wait for the client to take the one before.
	WriteStallTimeout time.Duration
	// KeepaliveTime and KeepaliveTimeout (Flight SQL): a connection silent for KeepaliveTime is
	// pinged, and closed, its calls ended, when the ping goes unanswered for KeepaliveTimeout.
	KeepaliveTime, KeepaliveTimeout time.Duration
}

// WithDefaults fills zero fields with the defaults (a nil Held or InFlight: a pool of its own,
// bounded by heldmem.DaemonBytesDefault).
func (l Limits) WithDefaults() Limits {
	if l.ConnectionsMax <= 0 {
		l.ConnectionsMax = ConnectionsMaxDefault
	}
	if l.SourceConnectionsMax <= 0 {
		l.SourceConnectionsMax = max(l.ConnectionsMax/4, 4) // a listener of a few connections has no share to keep
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = HandshakeTimeoutDefault
	}
	if l.PreAuthBytesMax <= 0 {
		l.PreAuthBytesMax = PreAuthBytesMaxDefault
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = IdleTimeoutDefault
	}
	if l.MessageBytesMax <= 0 {
		l.MessageBytesMax = MessageBytesMaxDefault
	}
	if l.MessageTimeout <= 0 {
		l.MessageTimeout = MessageTimeoutDefault
	}
	if l.WriteStallTimeout <= 0 {
		l.WriteStallTimeout = WriteStallTimeoutDefault
	}
	if l.KeepaliveTime <= 0 {
		l.KeepaliveTime = KeepaliveTimeDefault
	}
	if l.KeepaliveTimeout <= 0 {
		l.KeepaliveTimeout = KeepaliveTimeoutDefault
	}
	if l.HeldBytesMax <= 0 {
		l.HeldBytesMax = heldmem.ConnectionBytesDefault
	}
	if l.Held == nil {
		l.Held = heldmem.NewPool(0)
	}
	if l.InFlight == nil {
		l.InFlight = heldmem.NewPool(0)
	}
	return l
}

// Listener returns ln accepting at most max open connections (a connection counts until it is
// closed). A connection beyond that is handed to refuse, which writes the protocol's "too many
// connections" error (nil writes nothing), and closed; Accept goes on to the next one.
func Listener(ln net.Listener, max int, refuse func(net.Conn)) net.Listener {
	if max <= 0 {
		max = ConnectionsMaxDefault
	}
	return &listener{Listener: ln, slots: make(chan struct{}, max), refuse: refuse, lingering: make(chan struct{}, lingerMax)}
}

type listener struct {
	net.Listener
	slots     chan struct{}
	refuse    func(net.Conn)
	lingering chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &conn{Conn: c, slots: l.slots}, nil
		default:
			turnAway(c, l.refuse, l.lingering)
		}
	}
}

// turnAway writes c's refusal (nil refuse writes none) and closes it, lingering (a slot of
// lingering, when one is free) so that the refusal reaches the client.
func turnAway(c net.Conn, refuse func(net.Conn), lingering chan struct{}) {
	if refuse == nil {
		_ = c.Close()
		return
	}
	_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	refuse(c)
	select {
	case lingering <- struct{}{}:
		go func() {
			defer func() { <-lingering }()
			lingerClose(c)
		}()
	default:
		_ = c.Close()
	}
}

// lingerClose ends c after its refusal was written: the refusal and a FIN go out first, then
// what the client had sent is read and dropped, so the close does not reset the connection.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, lingerBytesMax))
	_ = c.Close()
}

// conn gives its slot back on the first Close.
type conn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { <-c.slots })
	return c.Conn.Close()
}

// NetConn is the connection accepted (as tls.Conn's NetConn).
func (c *conn) NetConn() net.Conn { return c.Conn }

// ReclaimQuietAfter is how long a connection must have sat without a request in progress (idle
// between keep-alive requests, or silent since it was accepted) before HTTP may close it to make
// room for a new one at the limit.
const ReclaimQuietAfter = 10 * time.Second

// reclaimQuietAfter is ReclaimQuietAfter; tests shorten it.
var reclaimQuietAfter = ReclaimQuietAfter

// HTTP makes hs serve at most max connections. At the limit, a new connection takes the place
// of the connection that has sat quiet longest, if one has for ReclaimQuietAfter: clients that
// open connections and leave them idle (keep-alive pools, or anyone with a request to spare,
// /health needs none) cannot hold the listener against the clients that have requests to make.
// Otherwise a request on a connection beyond the limit is answered 503 with Retry-After and the
// connection closed, and beyond twice max a connection is closed as soon as it is accepted. It
// counts through hs.ConnState, so the connections net/http sees keep their own type (a
// *tls.Conn stays one, and the 503 reaches TLS clients too). Call once hs.Handler is set,
// before hs serves.
func HTTP(hs *http.Server, max int) {
	if max <= 0 {
		max = ConnectionsMaxDefault
	}
	type state struct {
		over  bool      // beyond the limit: its requests are refused
		quiet time.Time // since when no request is in progress; zero while one is
	}
	var mu sync.Mutex
	open := map[net.Conn]*state{}
	// reclaim closes the connection quiet longest, if for ReclaimQuietAfter; mu is held.
	reclaim := func(now time.Time) bool {
		var victim net.Conn
		var since time.Time
		for c, st := range open { //determinism:ok outside the simulator; the oldest wins whatever the order
			if !st.over && !st.quiet.IsZero() && now.Sub(st.quiet) >= reclaimQuietAfter && (victim == nil || st.quiet.Before(since)) {
				victim, since = c, st.quiet
			}
		}
		if victim == nil {
			return false
		}
		delete(open, victim)
		go victim.Close() // a TLS close writes an alert: not on the accepting goroutine
		return true
	}
	next := hs.ConnState
	hs.ConnState = func(c net.Conn, cs http.ConnState) {
		now := time.Now()
		switch cs {
		case http.StateNew:
			mu.Lock()
			n := len(open)
			if n >= max && reclaim(now) {
				n--
			}
			if n < 2*max {
				open[c] = &state{over: n >= max, quiet: now}
			}
			mu.Unlock()
			if n >= 2*max {
				_ = c.Close()
			}
		case http.StateActive, http.StateIdle:
			mu.Lock()
			if st := open[c]; st != nil {
				st.quiet = time.Time{}
				if cs == http.StateIdle {
					st.quiet = now
				}
			}
			mu.Unlock()
		case http.StateClosed, http.StateHijacked:
			mu.Lock()
			delete(open, c)
			mu.Unlock()
		}
		if next != nil {
			next(c, cs)
		}
	}
	nextCtx := hs.ConnContext
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if nextCtx != nil {
			ctx = nextCtx(ctx, c)
		}
		return context.WithValue(ctx, connKey{}, c)
	}
	h := hs.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		mu.Lock()
		st := open[c]
		over := st == nil || st.over // nil: reclaimed as it began this request
		mu.Unlock()
		if over {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(&closeOnUnauthorized{ResponseWriter: w}, r)
	})
}

// closeOnUnauthorized closes the connection after a 401: a client that failed to authenticate
// then holds no connection slot past its request (a keep-alive connection would otherwise
// stay open for the idle timeout, and enough of them would fill the listener).
type closeOnUnauthorized struct {
	http.ResponseWriter
}

func (w *closeOnUnauthorized) WriteHeader(status int) {
	if status == http.StatusUnauthorized {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(status)
}

// Flush and Unwrap keep streaming answers (and http.ResponseController) working through it.
func (w *closeOnUnauthorized) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *closeOnUnauthorized) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// connKey carries a request's connection in its context.
type connKey struct{}

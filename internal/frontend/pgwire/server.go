// Package pgwire is the PostgreSQL wire protocol frontend: it accepts client connections
// (psql, pgx, JDBC, pgbench...), authenticates them, and runs their simple and extended protocol
// queries on a query.Backend, encoding the backend's Arrow batches as PostgreSQL rows batch by
// batch, so no result is ever held whole.
//
// determinism: outside the simulator (network listener and protocol codec)
package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/rawconn"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Options configure a Server. The zero value refuses TLS and every password login; add
// TrustUsers or an Authenticator to let clients in.
type Options struct {
	// TLS is asked, for each client that sends SSLRequest, for the configuration to
	// encrypt with; nil (or a nil result: no certificate now) answers 'N'.
	TLS func() *tls.Config
	// Gate, when set, decides every login before its password (trust, TLS requirements);
	// TrustUsers is then ignored.
	Gate query.Gate
	// TrustUsers may log in without a password from a loopback address. "*" trusts every user.
	TrustUsers []string
	// Authenticator checks everyone else (SCRAM-SHA-256 when it has a verifier for the user,
	// else a cleartext password). Nil refuses them.
	Authenticator Authenticator
	// ServerVersion is reported as server_version; default DefaultServerVersion.
	ServerVersion string
	// MessageBytesMax bounds one client message after login; default Limits.MessageBytesMax.
	MessageBytesMax int
	// Logger receives connection-level events (never passwords). Default slog.Default().
	Logger *slog.Logger
	// Limits bound connections, the duration of startup and authentication, messages before
	// authentication, and how long a message begun after it may take to arrive whole (zero
	// fields: netlimit's defaults).
	Limits netlimit.Limits
	// StatementsMax bounds the prepared statements one connection holds (the unnamed one
	// included), PortalsMax its open portals; defaults StatementsMaxDefault and
	// PortalsMaxDefault. A Parse or Bind past a bound fails with program_limit_exceeded
	// naming it; the connection goes on.
	StatementsMax, PortalsMax int
	// Registerer receives queryflux_frontend_bound_refusals_total; nil keeps it unregistered.
	Registerer prometheus.Registerer
	// NoEventLoop relays every forwarded connection with its goroutine (loop.go), as where
	// there is no event loop (outside Linux).
	NoEventLoop bool
}

// DefaultServerVersion is what clients see as server_version unless Options say otherwise.
const DefaultServerVersion = engine.PostgresServerVersion

// Server serves the PostgreSQL wire protocol on listeners.
type Server struct {
	backend query.Backend
	opts    Options
	log     *slog.Logger

	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[uint32]*conn // by process ID, for cancel requests
	open      map[net.Conn]struct{}
	closed    bool
	draining  atomic.Bool // Drain: idle connections outside a transaction end
	wg        sync.WaitGroup

	panics atomic.Int64 // handler panics recovered (bugs; the fuzz target requires none)

	refusals *prometheus.CounterVec // requests refused at StatementsMax or PortalsMax

	loop relayloop.Lazy // the event loop (loop.go), started on first use
	// loopStatements counts the statements the loop relayed (loopExecutes the extended
	// protocol's among them); loopAdmissions the transactions it admitted on its own thread
	// (without handing them to the connection's goroutine); loopPauses its hand-backs at a
	// message it does not relay.
	loopStatements, loopExecutes, loopAdmissions, loopPauses atomic.Int64
	// loopWatched counts the engine's messages the loop looked at in the statements' answers
	// (added when a connection leaves the loop).
	loopWatched atomic.Int64
}

// NewServer returns a server that runs queries on backend.
func NewServer(backend query.Backend, opts Options) *Server {
	if backend == nil {
		panic("pgwire: NewServer with nil backend")
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = DefaultServerVersion
	}
	if opts.StatementsMax <= 0 {
		opts.StatementsMax = StatementsMaxDefault
	}
	if opts.PortalsMax <= 0 {
		opts.PortalsMax = PortalsMaxDefault
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.MessageBytesMax <= 0 {
		opts.MessageBytesMax = opts.Limits.MessageBytesMax
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		backend: backend, opts: opts, log: log.With("frontend", "pgwire"),
		baseCtx: ctx, cancelBase: cancel, refusals: netlimit.BoundRefusals(opts.Registerer),
		listeners: map[net.Listener]struct{}{}, conns: map[uint32]*conn{}, open: map[net.Conn]struct{}{},
	}
	s.loop.Off = opts.NoEventLoop
	// io_uring where it works: measured cheaper per transaction for the passthrough on a quiet
	// machine (RESULTS.md, "End of session 24"); QUERYFLUX_RELAY_BACKEND overrides.
	s.loop.Backend = relayloop.BackendURing
	s.loop.Spin = rawconn.Spin()
	s.loop.Failed = func(err error) {
		s.log.Info("pgwire: no event loop; connections are relayed by goroutines", "err", redact.Error(err))
	}
	return s
}

// Serve accepts connections on l until l fails or the server is closed. It returns nil after
// Close, else the accept error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("pgwire: server closed")
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	if s.eventLoop() != nil {
		l = relayloop.Listener(l) // its sockets may go on the event loop (loop.go)
	} else {
		l = rawconn.Listener(l, 0) // sockets whose writes can be bounded (BoundWrites)
	}
	l = netlimit.PerSource(l, s.opts.Limits.SourceConnectionsMax, refuseTooMany, netlimit.SourceRefused("pgwire", s.refusals, s.log))
	l = netlimit.Listener(l, s.opts.Limits.ConnectionsMax, refuseTooMany)
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || s.draining.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		s.open[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.open, nc)
				s.mu.Unlock()
			}()
			s.handle(nc)
		}()
	}
}

// Close stops the listeners, cancels running queries, closes client connections and waits
// for their handlers to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		_ = l.Close()
	}
	for nc := range s.open {
		_ = nc.Close()
	}
	s.mu.Unlock()
	s.cancelBase()
	s.wg.Wait()
	s.loop.Close()
	return nil
}

// handle runs one client connection to its end. A malformed message ends the connection,
// never the process: a panic in the handler is logged and the connection closed.
func (s *Server) handle(nc net.Conn) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.log.Error("pgwire: connection handler panicked", "remote", nc.RemoteAddr().String(), "panic", fmt.Sprint(r))
		}
		_ = nc.Close()
	}()
	c := newConn(s, nc)
	err := c.serve()
	if writeStalled(err) || netlimit.WroteStalled(nc) {
		netlimit.WriteStalled("pgwire", s.refusals, s.log, nc.RemoteAddr().String(), c.user, s.opts.Limits.WriteStallTimeout)
	}
	if err != nil && !isClosedErr(err) {
		s.log.Debug("pgwire: connection ended", "remote", nc.RemoteAddr().String(), "err", redact.Error(err))
	}
}

// register gives c a process ID and secret for cancel requests; false when the server closed.
func (s *Server) register(c *conn) bool {
	var b [8]byte
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for {
		_, _ = rand.Read(b[:])
		pid := binary.BigEndian.Uint32(b[:4]) & 0x7fffffff
		if _, taken := s.conns[pid]; pid != 0 && !taken {
			c.pid, c.secret = pid, binary.BigEndian.Uint32(b[4:])
			s.conns[pid] = c
			return true
		}
	}
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[c.pid] == c {
		delete(s.conns, c.pid)
	}
}

// cancel cancels the running query of the connection pid when secret matches. As in
// PostgreSQL, a wrong key is ignored silently.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.conns[pid]
	s.mu.Unlock()
	var want [4]byte
	if c != nil {
		binary.BigEndian.PutUint32(want[:], c.secret)
	}
	// Compared in constant time: how far a guess matched must not show in how long it took.
	if c == nil || subtle.ConstantTimeCompare(secret, want[:]) != 1 {
		return
	}
	c.cancelRunning()
}

// writeStalled reports whether err ended a client that stopped reading its answers: a write
// on the goroutine (BoundWrites) or on the event loop (Pair.WriteTimeout) made no progress in
// time.
func writeStalled(err error) bool {
	return err != nil && (errors.Is(err, rawconn.ErrWriteStalled) || errors.Is(err, relayloop.ErrWriteTimeout))
}

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, errTerminate)
}

// refuseTooMany answers a connection over Limits.ConnectionsMax as a full PostgreSQL does: a
// FATAL 53300. Sent before the client's startup packet is read: libpq and pgx read it as the
// answer to their SSLRequest or startup message alike.
func refuseTooMany(nc net.Conn) {
	msg, err := (&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: sqlstate.TooManyConnections, Message: "sorry, too many clients already"}).Encode(nil)
	if err == nil {
		_, _ = nc.Write(msg)
	}
}

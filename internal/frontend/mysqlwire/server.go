// Package mysqlwire is the MySQL wire-protocol frontend: it accepts MySQL and MariaDB clients
// (handshake with mysql_native_password or caching_sha2_password, COM_QUERY with text results,
// COM_STMT_PREPARE/EXECUTE with binary results, COM_PING, COM_INIT_DB, COM_QUIT), hands each
// statement to a query.Backend and writes the Arrow result back as MySQL rows. Through a proxy
// core, a COM_QUERY or COM_STMT_EXECUTE routed to a MySQL-protocol engine is relayed instead:
// the engine's own result packets go to the client, never decoded (passthrough.go, stmt.go).
// The session dispatches the commands itself (commands.go).
//
// It touches the network (its listener and connections) and starts a goroutine per connection.
//
// determinism: outside the simulator (network listener and MySQL protocol codec)
package mysqlwire

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/rawconn"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Users is the auth hook: it tells which passwords a user may log in with. MySQL's
// challenge-response needs the clear password on the server side to check a scramble.
type Users interface {
	// Passwords returns the passwords user may use; found is false for an unknown user.
	// An empty string in the list allows an empty password.
	Passwords(user string) (passwords []string, found bool, err error)
}

// StaticUsers is a fixed user → password table.
type StaticUsers map[string]string

// Passwords implements Users.
func (s StaticUsers) Passwords(user string) ([]string, bool, error) {
	p, ok := s[user]
	if !ok {
		return nil, false, nil
	}
	return []string{p}, true, nil
}

// Options configure a Server.
type Options struct {
	// ServerVersion is announced in the handshake; default "8.0.11-queryflux".
	ServerVersion string
	// AuthMethod is the plugin users authenticate with: mysql.AUTH_NATIVE_PASSWORD (default) or
	// mysql.AUTH_CACHING_SHA2_PASSWORD.
	AuthMethod string
	// Users checks passwords; nil allows only LoopbackUser.
	Users Users
	// Gate, when set, decides every login before its password (trust, TLS requirements);
	// LoopbackUser is then ignored.
	Gate query.Gate
	// LoopbackUser, when set, may log in without a password from a loopback address.
	LoopbackUser string
	// TLS is asked, for each connection, for the configuration to offer TLS with (it also
	// carries caching_sha2 full authentication); nil, or a nil result, offers none.
	TLS func() *tls.Config
	// Logger; nil discards.
	Logger *slog.Logger
	// Limits bound connections, the handshake's duration, packets before login and, after
	// it, a message's size (MessageBytesMax is max_allowed_packet) and the time it may take to
	// arrive (zero fields: netlimit's defaults).
	Limits netlimit.Limits
	// Registerer receives queryflux_frontend_bound_refusals_total; nil keeps it unregistered.
	Registerer prometheus.Registerer
	// NoEventLoop relays every statement with its session's goroutine (loop.go), as where
	// there is no event loop.
	NoEventLoop bool
}

// Server serves MySQL clients on listeners. Safe for concurrent use.
type Server struct {
	backend query.Backend
	opts    Options
	// version is opts.ServerVersion's number, which a statement's executable comments
	// (/*!40101 ... */) are run against, as by that MySQL.
	version int
	srv     *server.Server // without TLS
	srvTLS  *server.Server // offering TLS, with the configuration opts.TLS gives at each handshake
	auth    *authProvider  // checks every login, and every COM_CHANGE_USER (changeuser.go)
	log     *slog.Logger
	// refusals counts logged-in clients' messages refused at a bound (too large, too slow).
	refusals *prometheus.CounterVec

	ctx    context.Context // ends on Close; parent of every query's context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	sessions  map[uint32]*session // by connection id, for KILL
	closed    bool
	draining  atomic.Bool // Drain: sessions idle outside a transaction end
	wg        sync.WaitGroup

	loop           relayloop.Lazy // the event loop (loop.go), started on first use
	loopStatements atomic.Int64
	loopHandOvers  atomic.Int64
	loopPings      atomic.Int64 // COM_PINGs the event loop answered (in part, at least)
	loopEntries    atomic.Int64 // times a session went on the event loop
	loopWatched    atomic.Int64 // engine packets the event loop's Watch looked at (added as sessions leave it)
	admin          adminCounts  // the counts its status tells (admin.go)

	panics    atomic.Int64 // recovered in connections, during login or after (bugs: the fuzz targets require none)
	lastPanic atomic.Value // string: the last recovered panic with its stack, for the report
}

// NewServer returns a server over backend.
func NewServer(backend query.Backend, opts Options) (*Server, error) {
	if backend == nil {
		return nil, errors.New("mysqlwire: nil backend")
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "8.0.11-queryflux"
	}
	if opts.AuthMethod == "" {
		opts.AuthMethod = mysql.AUTH_NATIVE_PASSWORD
	}
	if opts.AuthMethod != mysql.AUTH_NATIVE_PASSWORD && opts.AuthMethod != mysql.AUTH_CACHING_SHA2_PASSWORD {
		return nil, fmt.Errorf("mysqlwire: auth method %q: want %s or %s", opts.AuthMethod, mysql.AUTH_NATIVE_PASSWORD, mysql.AUTH_CACHING_SHA2_PASSWORD)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.Limits = opts.Limits.WithDefaults()
	// caching_sha2 full authentication without TLS sends the password RSA-encrypted.
	var key *rsa.PrivateKey
	if opts.AuthMethod == mysql.AUTH_CACHING_SHA2_PASSWORD {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, fmt.Errorf("mysqlwire: RSA key: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		backend:   backend,
		opts:      opts,
		version:   sqltok.MySQLVersion(opts.ServerVersion),
		log:       log,
		ctx:       ctx,
		cancel:    cancel,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
		sessions:  map[uint32]*session{},
		refusals:  netlimit.BoundRefusals(opts.Registerer),
	}
	s.loop.Off = opts.NoEventLoop
	// io_uring where it works: measured cheaper per statement for the MySQL passthrough
	// (RESULTS.md, "relayloop on io_uring", session 24); QUERYFLUX_RELAY_BACKEND overrides.
	s.loop.Backend = relayloop.BackendURing
	s.loop.Spin = rawconn.Spin()
	s.loop.Failed = func(err error) {
		log.Info("mysqlwire: no event loop; connections are relayed by goroutines", "err", redact.Error(err))
	}
	auth := &authProvider{s: s, key: key}
	s.auth = auth
	s.srv = server.NewServerWithAuth(opts.ServerVersion, mysql.DEFAULT_COLLATION_ID, opts.AuthMethod, key, nil, auth)
	if opts.TLS != nil {
		// Only for go-mysql to announce TLS in its greeting: the packet gate runs the handshake.
		announce := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return nil, errors.New("mysqlwire: TLS runs in the packet gate")
		}}
		s.srvTLS = server.NewServerWithAuth(opts.ServerVersion, mysql.DEFAULT_COLLATION_ID, opts.AuthMethod, key, announce, auth)
	}
	return s, nil
}

// goMySQL is the go-mysql server for a new connection, and the TLS configuration its packet
// gate answers SSLRequests with: while a certificate is configured, the server that announces
// TLS (go-mysql itself never runs it, see packetGate).
func (s *Server) goMySQL() (*server.Server, *tls.Config) {
	if s.srvTLS != nil {
		if cfg := s.opts.TLS(); cfg != nil {
			return s.srvTLS, cfg
		}
	}
	return s.srv, nil
}

// Serve accepts connections on l until l fails or the server closes.
func (s *Server) Serve(l net.Listener) error {
	if !s.track(l, true) {
		l.Close()
		return net.ErrClosed
	}
	defer s.track(l, false)
	if s.eventLoop() != nil {
		l = relayloop.Listener(l) // its sockets may go on the event loop (loop.go)
	} else {
		l = rawconn.Listener(l, 0) // sockets whose writes can be bounded (writestall.go)
	}
	l = netlimit.PerSource(l, s.opts.Limits.SourceConnectionsMax, refuseTooMany, netlimit.SourceRefused("mysqlwire", s.refusals, s.log))
	l = netlimit.Listener(l, s.opts.Limits.ConnectionsMax, refuseTooMany)
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() || s.draining.Load() {
				return net.ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !s.trackConn(nc, true) {
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go s.serveConn(nc)
	}
}

// Close stops the listeners, cancels running queries and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.loop.Close()
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) track(l net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closed {
			return false
		}
		s.listeners[l] = struct{}{}
	} else {
		delete(s.listeners, l)
	}
	return true
}

func (s *Server) trackConn(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closed {
			return false
		}
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
	return true
}

// serveConn runs one client session. A panic from malformed input ends this connection only.
func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer s.trackConn(nc, false)
	defer nc.Close()
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.lastPanic.Store(fmt.Sprintf("%v\n%s", r, debug.Stack()))
			s.log.Warn("mysqlwire: connection ended by malformed input", "remote", nc.RemoteAddr().String(), "panic", fmt.Sprint(r))
		}
	}()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	srv, tlsConfig := s.goMySQL()
	gate := newPacketGate(nc, s.opts.Limits, tlsConfig, s.log)
	gate.refusals = s.refusals
	defer gate.stop()
	buffered := newFlushOnReadConn(gate)
	buffered.login.metadata = s.offersMetadata()
	h := &session{s: s, ctx: ctx, remote: nc.RemoteAddr().String(), out: buffered, raw: nc, gate: gate, lc: relayloop.ConnOf(nc),
		heldBytes: s.opts.Limits.Held.Budget(s.opts.Limits.HeldBytesMax)}
	defer h.heldBytes.Close()
	_ = buffered.SetDeadline(time.Now().Add(s.opts.Limits.HandshakeTimeout))
	c, err := srv.NewCustomizedConn(buffered, &authenticator{s: s, remote: nc.RemoteAddr(), gate: gate, h: h}, h)
	if err != nil {
		s.log.Debug("mysqlwire: handshake failed", "remote", h.remote, "err", redact.Error(err))
		return
	}
	_ = c.SetDeadline(time.Time{})
	netlimit.Authenticated(nc) // no longer in its source's share of the connections before login
	h.boundWrites()
	defer h.reportWriteStall()
	h.metadata = buffered.login.metadata && gate.metadata
	h.salt = buffered.login.salt
	buffered.login = nil
	h.conn, h.user = c, c.GetUser()
	// The greeting offers no CLIENT_DEPRECATE_EOF (go-mysql writes EOF packets), so it is not in
	// force, whatever the client sent (go-mysql's own client sends it unoffered and frames by
	// what both offered, as the protocol has it).
	c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
	gate.refuseCmd = h.refuseUnread
	h.headers = h.attributes()
	h.multiStatements = c.HasCapability(mysql.CLIENT_MULTI_STATEMENTS)
	h.collation = carriedCollation(c.Charset())
	s.mu.Lock()
	s.sessions[c.ConnectionID()] = h
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, c.ConnectionID())
		s.mu.Unlock()
	}()
	defer h.unpin() // a connection that ends inside a transaction (or holding a lock) rolls it back
	defer h.dropAdmitted()
	h.serveCommands()
}

// authenticator hands every user name to authProvider, which decides.
type authenticator struct {
	s      *Server
	remote net.Addr
	gate   *packetGate // switches to the logged-in client's bounds on success
	h      *session    // whose handshake's database is checked on success (database.go)
}

func (a *authenticator) GetCredential(string) (server.Credential, bool, error) {
	return server.Credential{Passwords: []string{unusablePassword}, AuthPluginName: a.s.opts.AuthMethod}, true, nil
}

// admit asks the Gate, else the LoopbackUser rule, whether user logs in without a password.
func (s *Server) admit(user string, remote net.Addr, secure bool) (bool, error) {
	if qe := query.UserNameRefused(user); qe != nil {
		return false, toMySQLError(qe)
	}
	if s.opts.Gate == nil {
		return user != "" && user == s.opts.LoopbackUser && isLoopback(remote), nil
	}
	query.AwaitReady(s.ctx, s.backend) // a starting node holds the login for its first configuration
	ok, err := s.opts.Gate.Admit(s.login(user, remote, secure))
	if err != nil {
		return false, s.gateRefused(user, remote, err)
	}
	return ok, nil
}

// gateRefused is the client's answer to a Gate's refusal err of user's login; a Gate that
// failed rather than refused is logged, and the client is told only that the login failed.
func (s *Server) gateRefused(user string, remote net.Addr, err error) error {
	qe, failed := query.GateRefusal(err)
	if failed {
		s.log.Error("mysqlwire: login refused: the gate failed", "user", user, "remote", remote.String(), "err", config.RedactURL(err.Error()))
	}
	return toMySQLError(qe)
}

// login is what the Gate is told about a login.
func (s *Server) login(user string, remote net.Addr, secure bool) query.Login {
	return query.Login{Protocol: query.ProtocolMySQL, User: user, ClientAddr: remote.String(), TLS: secure}
}

// verified asks the Gate about user once the password was found right.
func (s *Server) verified(user string, remote net.Addr, secure bool) error {
	if s.opts.Gate == nil {
		return nil
	}
	if err := s.opts.Gate.Verified(s.login(user, remote, secure)); err != nil {
		return s.gateRefused(user, remote, err)
	}
	return nil
}

// OnAuthSuccess sets the session's first status flags, which the OK ending the handshake
// carries: autocommit on (go-mysql starts a connection with no flags; the greeting's own are
// set as it goes out, see login.go). A handshake's database that does not exist ends the login
// with 1049, as on MariaDB (go-mysql writes the error in place of the OK).
func (a *authenticator) OnAuthSuccess(c *server.Conn) error {
	a.gate.loggedIn()
	c.SetStatus(mysql.SERVER_STATUS_AUTOCOMMIT)
	if a.h != nil {
		return a.h.loginDatabase(c)
	}
	return nil
}

func (a *authenticator) OnAuthFailure(c *server.Conn, err error) {
	a.s.log.Info("mysqlwire: authentication failed", "user", c.GetUser(), "remote", a.remote.String())
}

// passwordFailed tells the Gate and Users of a login refused for its password. Users is not
// told of a login the Gate refused: the Gate counted it, and the failures metric counted such
// logins twice.
func (s *Server) passwordFailed(user string, remote net.Addr, secure bool) {
	if s.opts.Gate != nil {
		query.LoginFailed(s.opts.Gate, s.login(user, remote, secure))
	}
	if fo, ok := s.opts.Users.(FailureObserver); ok {
		fo.AuthFailed(user)
	}
}

func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// flushOnReadConn buffers writes and flushes them before every read (and on close), so a
// resultset's packets leave in a few segments instead of one syscall per packet, and nothing
// is held back when the server turns to wait for the client.
type flushOnReadConn struct {
	net.Conn
	w     *bufio.Writer
	login *loginView // go-mysql's login packets, read as they go out (login.go); nil once logged in

	mu      sync.Mutex
	pending []byte // read by a watch before the session asked
	readErr error  // the client hung up during a watch

	// watchAfter's state: the timer, reused by every statement; the running statement's
	// hangup (nil when none runs) and the stop of its watch once started.
	timer        *time.Timer
	stopAfter    func()
	hangup       func()
	stopWatching func()
}

func newFlushOnReadConn(c net.Conn) *flushOnReadConn {
	return &flushOnReadConn{Conn: c, w: bufio.NewWriterSize(c, 32<<10), login: &loginView{}}
}

func (c *flushOnReadConn) isSecure() bool {
	s, ok := c.Conn.(secureConn)
	return ok && s.isSecure()
}

func (c *flushOnReadConn) Write(p []byte) (int, error) {
	if c.login != nil {
		if _, err := c.w.Write(c.login.serverPacket(p)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *flushOnReadConn) Read(p []byte) (int, error) {
	if err := c.w.Flush(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		c.mu.Unlock()
		return n, nil
	}
	if err := c.readErr; err != nil {
		c.mu.Unlock()
		return 0, err
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

// watch calls hangup if the client closes its connection while a statement runs (go-sql-driver
// does so when a query's context ends), so the engine query stops instead of running for
// nobody. Bytes the client sends meanwhile are kept for the session's next read. stop ends
// the watch; call it before the session reads again.
func (c *flushOnReadConn) watch(hangup func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [512]byte
		n, err := c.Conn.Read(b[:])
		var ne net.Error
		hungUp := err != nil && !(errors.As(err, &ne) && ne.Timeout())
		c.mu.Lock()
		c.pending = append(c.pending, b[:n]...)
		if hungUp {
			c.readErr = err
		}
		c.mu.Unlock()
		if hungUp {
			hangup()
		}
	}()
	return func() {
		c.Conn.SetReadDeadline(time.Unix(1, 0)) // wakes the watching Read
		<-done
		c.Conn.SetReadDeadline(time.Time{})
	}
}

// watchDelay is how long a statement runs before its connection is watched for a hangup: a
// watch costs a goroutine and two deadline changes, more than a fast statement itself.
const watchDelay = 2 * time.Millisecond

// watchAfter is watch started only once the statement has run for delay. One timer per
// connection serves all its statements, and stop is the same function each time: a fast
// statement costs no allocation here.
func (c *flushOnReadConn) watchAfter(delay time.Duration, hangup func()) (stop func()) {
	c.mu.Lock()
	c.hangup = hangup
	c.mu.Unlock()
	if c.timer == nil {
		c.timer = time.AfterFunc(delay, c.startWatch)
		c.stopAfter = c.stopWatch
	} else {
		c.timer.Reset(delay)
	}
	return c.stopAfter
}

// startWatch runs on the timer: it watches for the running statement, if one still runs. A
// late run for an earlier statement only starts the next statement's watch early.
func (c *flushOnReadConn) startWatch() {
	c.mu.Lock()
	if c.hangup != nil && c.stopWatching == nil {
		c.stopWatching = c.watch(c.hangup)
	}
	c.mu.Unlock()
}

func (c *flushOnReadConn) stopWatch() {
	if c.timer == nil {
		return // no statement was ever watched
	}
	c.timer.Stop()
	c.mu.Lock()
	stop := c.stopWatching
	c.hangup, c.stopWatching = nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (c *flushOnReadConn) Close() error {
	c.w.Flush()
	return c.Conn.Close()
}

// SetDeadline and SetWriteDeadline flush first: crypto/tls sets a past write deadline right
// before it closes, which would otherwise strand a final error packet in the buffer.
func (c *flushOnReadConn) SetDeadline(t time.Time) error {
	c.w.Flush()
	return c.Conn.SetDeadline(t)
}

func (c *flushOnReadConn) SetWriteDeadline(t time.Time) error {
	c.w.Flush()
	return c.Conn.SetWriteDeadline(t)
}

// idle reports whether nothing of the client's is kept here (read by a watch) and no watch
// runs: the socket can be lent to the event loop.
func (c *flushOnReadConn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) == 0 && c.readErr == nil && c.stopWatching == nil
}

package pgwire

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/pgoptions"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// errTerminate ends a connection the client closed politely.
var errTerminate = errors.New("pgwire: client terminated the connection")

// ioError marks a failure to talk to the client: the connection is over.
type ioError struct{ err error }

func (e *ioError) Error() string { return "pgwire: client I/O: " + e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

// conn is one client connection: its session (user, database, startup parameters), its
// prepared statements and portals, and the cancel hook of whatever query runs now.
type conn struct {
	srv *Server
	nc  net.Conn
	lc  *relayloop.Conn // nc's plain TCP socket, which the event loop may relay (loop.go)
	cr  *clientReader   // what be reads: nc, and what a watcher read ahead (watch.go)
	be  *pgproto3.Backend

	pid, secret uint32
	started     time.Time // the connection's start: pg_stat_activity.backend_start on DuckDB
	user        string
	database    string
	startup     map[string]string
	options     [][2]string             // the startup "options" (-c name=value), for engine sessions
	headers     map[string]string       // startup parameters as request headers, built on first use
	setup       *string                 // setupSQL's answer, built on first use
	clientAddr  string                  // RemoteAddr, built on first use
	sequences   *query.SessionSequences // the session's currval and lastval, made on first use
	timeZone    string                  // the session's TimeZone now (query.Request.TimeZone; txzone.go)
	zoneSent    string                  // the TimeZone the client was last told (ParameterStatus)
	loginZone   string                  // the TimeZone reported at login: what RESET sets back
	zones       *zoneTx                 // the open transaction's TimeZone changes, if any (txzone.go)

	session engine.Session // pinned engine connection while a transaction is open, else nil
	wire    *wireState     // the engine connection the client's messages are forwarded to (forward.go)
	wireReq query.Request  // the request of the wire's first statement (wireRequest)
	spare   *wireState     // a closed wire's state for the next one (openWireWith), or nil
	// shaped is the last simple Query's text the loop found the shape of, with it: a request
	// carries it (query.Request.Shape), which vouches only for that very string.
	shaped sqltok.ShapedText
	texts  textArena // the loop's simple Queries' texts (loop.go's query)
	// lateCancel: a statement's query timeout fired (its AfterFunc's stop failed), so its
	// engine connection's Cancel may still come: that wire's memory is not reused (spare).
	lateCancel bool
	owner      uint64 // this client for the engine pool, once it used a wire
	unwatch    func() // stops the watcher of the client's socket while the engine works
	txStatus   byte   // what ReadyForQuery reports: 'I', 'T' or 'E'

	stmts      map[string]*preparedStmt
	portals    map[string]*portal
	held       *heldmem.Budget // the bytes stmts and portals hold (bounds.go)
	skipToSync bool            // an extended-protocol error discards messages until Sync

	runMu           sync.Mutex
	runCancel       context.CancelFunc
	cancelConn      engine.PGWire // what cancelEngine cancels (setEngineCancel)
	cancelWire      func()        // cancelEngine as a func, made once
	cancelRequested atomic.Bool

	unflushed int // bytes of rows sent since the last flush
	scratch   []byte
	values    [][]byte
	ends      []int
	typeMap   *pgtype.Map // per connection: pgtype.Map is not safe for concurrent use

	ctx       context.Context // the connection's life, parent of its statements' contexts
	noWaitCtx context.Context // ctx under proxy.NoWait, built on first use

	idleMu sync.Mutex
	idle   bool     // waiting for the client's next message (Drain wakes idle connections)
	onloop *loopRun // while the event loop relays the client (loop.go)

	// For the event loop: did the last message end a batch (a simple Query or a Sync), how
	// often did the client leave the loop with a message the loop does not relay.
	batchEnded   bool
	loopMisses   int
	loopHandOffs int // transactions in a row the loop handed to the goroutine to admit (loop.go)
	loopBackoff  int // messages to relay on the goroutine before the loop is tried again
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc, typeMap: pgtype.NewMap(), txStatus: 'I', stmts: map[string]*preparedStmt{}, portals: map[string]*portal{},
		held: s.opts.Limits.Held.Budget(s.opts.Limits.HeldBytesMax), started: time.Now()}
	c.setStream(nc)
	return c
}

func (c *conn) setStream(nc net.Conn) {
	c.nc = nc
	c.lc = relayloop.ConnOf(nc)
	c.cr = &clientReader{nc: nc}
	c.be = pgproto3.NewBackend(c.cr, nc)
	c.be.SetMaxBodyLen(c.srv.opts.Limits.PreAuthBytesMax) // raised once authenticated
}

func (c *conn) serve() error {
	_ = c.nc.SetDeadline(time.Now().Add(c.srv.opts.Limits.HandshakeTimeout))
	ok, err := c.startup_()
	if err != nil || !ok {
		return err
	}
	if err := c.authenticate(); err != nil {
		return err
	}
	netlimit.Authenticated(c.nc) // no longer in its source's share of the connections before login
	// A client that stops reading its answers ends once a write makes no progress for this long
	// (the loop's pairs get it as WriteTimeout): it would hold its engine connection and
	// capacity slot for as long as it stays connected.
	netlimit.BoundWrites(c.nc, c.srv.opts.Limits.WriteStallTimeout)
	if dc, ok := c.srv.backend.(query.DatabaseChecker); ok {
		if err := dc.CheckDatabase(query.ProtocolPostgres, c.database); err != nil {
			code, msg := sqlstate.InvalidCatalogName, err.Error()
			if qe, isQE := err.(*query.Error); isQE {
				code, msg = qe.Code, qe.Message
			}
			return c.fatal(code, msg)
		}
	}
	c.be.SetMaxBodyLen(c.srv.opts.MessageBytesMax)
	c.cr.loggedIn(c.srv.opts.MessageBytesMax, c.srv.opts.Limits.MessageTimeout, c.srv.opts.Limits.InFlight)
	c.cr.refuseParse = c.refuseUnread
	defer c.cr.giveBack()
	defer c.held.Close() // after unregister (deferred below) has closed the portals
	defer c.cr.msg.Stop()
	// Statement contexts derive from this connection's own: deriving them from the server's
	// would take its one lock on every statement of every connection. Cancelled after
	// unregister has closed the connection's portals and session.
	var cancel context.CancelFunc
	c.ctx, cancel = context.WithCancel(c.srv.baseCtx)
	defer cancel()
	if !c.srv.register(c) {
		return c.fatal(sqlstate.AdminShutdown, "the server is shutting down")
	}
	defer c.unregister()
	_ = c.nc.SetDeadline(time.Time{})
	c.sendWelcome()
	if err := c.flush(); err != nil {
		return err
	}
	return c.loop()
}

func (c *conn) unregister() {
	c.srv.unregister(c)
	for name := range c.portals {
		c.closePortal(name)
	}
	if c.session != nil {
		_ = c.session.Close() // rolls back an open transaction
		c.session = nil
	}
	c.closeWire()
	if cc, ok := c.srv.backend.(engine.ClientCloser); ok && c.clientAddr != "" {
		cc.ClientClosed(query.ProtocolPostgres, c.clientAddr) // its advisory locks end with it
	}
}

// startup_ reads startup packets until a StartupMessage; ok is false when the connection
// only carried a cancel request.
func (c *conn) startup_() (ok bool, err error) {
	for range 3 { // SSLRequest, then GSSEncRequest at most, then the startup message
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			if malformedStartup(err) { // an oversized or unknown startup packet: say so, as PostgreSQL does
				return false, c.fatal(sqlstate.ProtocolViolation, err.Error())
			}
			return false, err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if err := c.answerSSL(); err != nil {
				return false, err
			}
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false, &ioError{err}
			}
		case *pgproto3.CancelRequest:
			c.srv.cancel(m.ProcessID, m.SecretKey)
			return false, nil
		case *pgproto3.StartupMessage:
			c.cr.typed = true
			c.startup = map[string]string{}
			for k, v := range m.Parameters {
				c.startup[k] = v
			}
			c.user = m.Parameters["user"]
			c.database = m.Parameters["database"]
			if c.database == "" {
				c.database = c.user
			}
			if c.user == "" {
				return false, c.fatal(sqlstate.InvalidAuthorizationSpecification, "no PostgreSQL user name specified in startup packet")
			}
			if qe := query.UserNameRefused(c.user); qe != nil {
				return false, c.fatal(qe.Code, qe.Message)
			}
			if o := m.Parameters["options"]; o != "" {
				if c.options, err = pgoptions.Parse(o); err != nil {
					return false, c.fatal(sqlstate.InvalidParameterValue, err.Error())
				}
			}
			return true, nil
		default:
			return false, fmt.Errorf("pgwire: unexpected startup message %T", msg)
		}
	}
	return false, errors.New("pgwire: too many startup packets")
}

// malformedStartup reports whether reading a startup packet failed on what the client sent
// (a length out of bounds, an unknown protocol version) rather than on the connection.
func malformedStartup(err error) bool {
	var ne net.Error
	return !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &ne) && !errors.Is(err, net.ErrClosed)
}

// answerSSL accepts TLS when configured (and upgrades the stream), refuses it cleanly otherwise.
func (c *conn) answerSSL() error {
	var cfg *tls.Config
	if c.srv.opts.TLS != nil {
		cfg = c.srv.opts.TLS()
	}
	if _, isTLS := c.nc.(*tls.Conn); isTLS || cfg == nil {
		if _, err := c.nc.Write([]byte{'N'}); err != nil {
			return &ioError{err}
		}
		return nil
	}
	if _, err := c.nc.Write([]byte{'S'}); err != nil {
		return &ioError{err}
	}
	tc := tls.Server(c.nc, cfg)
	if err := tc.Handshake(); err != nil {
		return &ioError{err}
	}
	c.setStream(tc)
	return nil
}

func (c *conn) sendWelcome() {
	c.be.Send(&pgproto3.AuthenticationOk{})
	c.timeZone = c.loginTimeZone()
	c.zoneSent, c.loginZone = c.timeZone, c.timeZone
	params := slices.Concat([][2]string{{"server_version", c.srv.opts.ServerVersion}}, engine.PostgresLoginSettings, [][2]string{
		{"TimeZone", c.timeZone},
		{"session_authorization", c.user},
		{"application_name", c.startup["application_name"]},
	})
	for _, p := range params {
		c.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	var key [4]byte
	key[0], key[1], key[2], key[3] = byte(c.secret>>24), byte(c.secret>>16), byte(c.secret>>8), byte(c.secret)
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: key[:]})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
}

// loginTimeZone is the TimeZone reported at login: when the client's statements are relayed
// to PostgreSQL, which writes timestamptz values in the session's zone, the one the client's
// startup set, else the engine servers' (proxy.Core.LoginTimeZone); else UTC, the zone this
// frontend writes them in itself.
func (c *conn) loginTimeZone() string {
	zone := ""
	if b, ok := c.srv.backend.(interface{ LoginTimeZone() string }); ok {
		zone = b.LoginTimeZone()
	}
	if zone == "" {
		return "UTC"
	}
	return cmp.Or(c.clientTimeZone(), zone)
}

// clientTimeZone is the TimeZone the client's startup set: its -c option, which is applied
// after its parameters (pooling.go), else its parameter; "" for none.
func (c *conn) clientTimeZone() string {
	tz := ""
	for k, v := range c.startup {
		if strings.EqualFold(k, "timezone") {
			tz = v
		}
	}
	for _, kv := range c.options {
		if strings.EqualFold(kv[0], "timezone") {
			tz = kv[1]
		}
	}
	return tz
}

func (c *conn) loop() error {
	for {
		if c.waitingForClient(true) {
			return c.shuttingDown()
		}
		if c.loopable() {
			entered, err := c.onLoop()
			if err != nil {
				return err
			}
			if entered {
				continue
			}
		}
		msg, err := c.receive()
		if err != nil && c.drainInterrupted(err) {
			continue // Drain woke an idle connection: end it, or keep reading inside a transaction
		}
		c.waitingForClient(false)
		if unread := (*unreadMessage)(nil); errors.As(err, &unread) {
			if !c.skipToSync { // else skipped, as a message read would be
				c.sendError(unread.err) // as dispatch answers a refused Parse
				c.skipToSync = true
			}
			continue
		}
		if err != nil {
			return c.receiveFailed(err)
		}
		if c.skipToSync {
			if _, isSync := msg.(*pgproto3.Sync); !isSync {
				if _, isTerm := msg.(*pgproto3.Terminate); !isTerm {
					continue
				}
			}
		}
		switch msg.(type) {
		case *pgproto3.Query, *pgproto3.Sync:
			c.batchEnded = true
		default:
			c.batchEnded = false
		}
		if err := c.dispatch(msg); err != nil {
			return err
		}
		c.letGo(msg)
	}
}

// keptBufferBytes is the largest buffer a connection keeps between messages.
const keptBufferBytes = 64 << 10

// letGo drops what a handled message leaves with the connection: pgproto3 decodes each kind
// of message into one struct it reuses, so a client's last Query, Parse or Bind (up to
// MessageBytesMax each) would stay with an idle connection, and so would the scratch buffer
// that encoded it. What the connection keeps (statements, portals) it copied or counted.
func (c *conn) letGo(msg pgproto3.FrontendMessage) {
	switch m := msg.(type) {
	case *pgproto3.Query:
		m.String = ""
	case *pgproto3.Parse:
		m.Query, m.ParameterOIDs = "", nil
	case *pgproto3.Bind:
		m.Parameters, m.ParameterFormatCodes, m.ResultFormatCodes = nil, nil, nil
	case *pgproto3.CopyData:
		m.Data = nil
	case *pgproto3.FunctionCall:
		m.Arguments = nil
	}
	if cap(c.scratch) > keptBufferBytes {
		c.scratch = nil
	}
}

func (c *conn) dispatch(msg pgproto3.FrontendMessage) error {
	if sql, want := c.wantsWire(msg); want && c.wire == nil {
		opened := false
		var err error
		if preparesOnly(msg, sql) && c.executesNothing() {
			opened, err = c.openPrepareWire(sql) // no slot: the batch executes nothing
		}
		if !opened && err == nil {
			_, err = c.openWire(sql)
		}
		if err != nil {
			return c.refuseMessage(msg, err)
		}
	}
	if c.wire != nil {
		return c.forward(msg)
	}
	var err error
	switch m := msg.(type) {
	case *pgproto3.Query:
		return c.simpleQuery(m.String)
	case *pgproto3.Parse:
		err = c.parse(m)
	case *pgproto3.Bind:
		err = c.bind(m)
	case *pgproto3.Describe:
		err = c.describe(m)
	case *pgproto3.Execute:
		err = c.execute(m)
	case *pgproto3.Close:
		err = c.close(m)
	case *pgproto3.Sync:
		c.skipToSync = false
		if c.session == nil {
			c.closePortals() // portals end with the implicit transaction; an explicit one's with it
		}
		c.syncTxStatus()
		c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
		return c.flush()
	case *pgproto3.Flush:
		return c.flush()
	case *pgproto3.Terminate:
		return errTerminate
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		return nil // not in COPY mode: PostgreSQL ignores these too
	default:
		err = &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf("pgwire: %T is not supported", msg)}
	}
	if err != nil {
		var ioe *ioError
		if errors.As(err, &ioe) {
			return err
		}
		c.sendError(err)
		c.skipToSync = true
	}
	return nil
}

// refuseMessage answers msg with err: a simple Query ends with ReadyForQuery, an
// extended-protocol message skips the client's messages up to Sync.
func (c *conn) refuseMessage(msg pgproto3.FrontendMessage, err error) error {
	var ioe *ioError
	if errors.As(err, &ioe) {
		return err
	}
	c.sendError(err)
	if _, isQuery := msg.(*pgproto3.Query); isQuery {
		c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
		return c.flush()
	}
	c.skipToSync = true
	return nil
}

// fatal tells the client why the connection ends and returns an error ending it.
func (c *conn) fatal(code, msg string) error {
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	_ = c.be.Flush()
	return fmt.Errorf("pgwire: %s: %s", code, msg)
}

func (c *conn) flush() error {
	c.unflushed = 0
	if err := c.be.Flush(); err != nil {
		return &ioError{err}
	}
	return nil
}

// beginRun makes ctx's cancel the one a CancelRequest triggers while a statement runs.
func (c *conn) beginRun(cancel context.CancelFunc) {
	c.runMu.Lock()
	c.runCancel = cancel
	c.runMu.Unlock()
	c.cancelRequested.Store(false)
}

func (c *conn) endRun() {
	c.runMu.Lock()
	c.runCancel, c.cancelConn = nil, nil
	c.runMu.Unlock()
}

func (c *conn) cancelRunning() {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.runCancel != nil {
		c.cancelRequested.Store(true)
		c.runCancel()
	}
}

// request builds the query.Request for sql. The headers map and the client address are built
// once per connection (they are on every statement's hot path) and shared by its requests,
// which only read them; a SET application_name drops the map (see localStatement).
func (c *conn) request(sql string, args []any) *query.Request {
	req := new(query.Request)
	c.fillRequest(req, sql, args)
	return req
}

// wireRequest is the request of a wire's first statement (openWireWith), made in the memory of
// the last wire's: a wire opens only once the client's last one is closed, and closeWire
// reports its statements first, after which nothing reads their request (the core's records
// copy what they keep). One allocation less per transaction in transaction pool mode.
func (c *conn) wireRequest(sql string) *query.Request {
	c.fillRequest(&c.wireReq, sql, nil)
	return &c.wireReq
}

// fillRequest makes *req the request for sql, with nothing of what it held before.
func (c *conn) fillRequest(req *query.Request, sql string, args []any) {
	if c.headers == nil {
		c.headers = make(map[string]string, len(c.startup))
		for k, v := range c.startup {
			if k != "user" && k != "database" {
				c.headers[k] = v
			}
		}
	}
	if c.clientAddr == "" {
		c.clientAddr = c.nc.RemoteAddr().String()
	}
	if c.sequences == nil {
		c.sequences = new(query.SessionSequences)
	}
	*req = query.Request{
		SQL: sql, Args: args, User: c.user, Protocol: query.ProtocolPostgres,
		Database: c.database, Headers: c.headers, ClientAddr: c.clientAddr, SessionID: c.pid, SessionStart: c.started, Shape: c.shaped,
		Sequences: c.sequences, TimeZone: c.timeZone,
	}
}

func isLoopback(addr net.Addr) bool {
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// login is what the Gate is told about this client's login.
func (c *conn) login(scram bool) query.Login {
	_, secure := c.nc.(*tls.Conn)
	return query.Login{Protocol: query.ProtocolPostgres, User: c.user,
		ClientAddr: c.nc.RemoteAddr().String(), TLS: secure, Cleartext: !scram}
}

// refused ends the connection with the Gate's refusal.
func (c *conn) refused(err error) error {
	qe, failed := query.GateRefusal(err)
	if failed {
		c.srv.log.Error("pgwire: login refused: the gate failed", "user", c.user, "remote", c.nc.RemoteAddr().String(), "err", config.RedactURL(err.Error()))
	} else {
		c.srv.log.Info("pgwire: login refused", "user", c.user, "remote", c.nc.RemoteAddr().String(), "err", qe.Message)
	}
	return c.fatal(qe.Code, qe.Message)
}

// trusted asks the Gate, else TrustUsers, whether the client logs in without a password.
// A refusal ends the connection with the Gate's message.
func (c *conn) trusted(scram bool) (bool, error) {
	if g := c.srv.opts.Gate; g != nil {
		query.AwaitReady(c.srv.baseCtx, c.srv.backend) // a starting node holds the login for its first configuration
		ok, err := g.Admit(c.login(scram))
		if err != nil {
			return false, c.refused(err)
		}
		return ok, nil
	}
	if !isLoopback(c.nc.RemoteAddr()) {
		return false, nil
	}
	return slices.Contains(c.srv.opts.TrustUsers, c.user) || slices.Contains(c.srv.opts.TrustUsers, "*"), nil
}

// authenticate runs trust, SCRAM-SHA-256 or cleartext password authentication.
func (c *conn) authenticate() error {
	a := c.srv.opts.Authenticator
	var verifier string
	scram, mock := false, false
	if a != nil {
		verifier, scram = a.SCRAMVerifier(c.user)
		if u, ok := a.(UnknownUsers); ok && !scram {
			verifier, mock = u.MockSCRAMVerifier(c.user)
			scram = mock
		}
	}
	if ok, err := c.trusted(scram); err != nil || ok {
		return err
	}
	if a == nil {
		return c.fatal(sqlstate.InvalidAuthorizationSpecification, fmt.Sprintf("no authentication method allows user %q", c.user))
	}
	if scram {
		if err := c.authSCRAM(verifier, mock); err != nil {
			return err
		}
	} else if err := c.authCleartext(a); err != nil {
		return err
	}
	if g := c.srv.opts.Gate; g != nil {
		if err := g.Verified(c.login(scram)); err != nil {
			return c.refused(err)
		}
	}
	return nil
}

func (c *conn) authCleartext(a Authenticator) error {
	c.be.Send(&pgproto3.AuthenticationCleartextPassword{})
	if err := c.flush(); err != nil {
		return err
	}
	_ = c.be.SetAuthType(pgproto3.AuthTypeCleartextPassword)
	msg, err := c.be.Receive()
	if err != nil {
		return err
	}
	pw, ok := msg.(*pgproto3.PasswordMessage)
	if !ok || !a.CheckPassword(c.user, pw.Password) {
		return c.authFailed(false)
	}
	return nil
}

// authFailed ends a login whose password was wrong; scram tells the Gate which way it came.
func (c *conn) authFailed(scram bool) error {
	c.srv.log.Info("pgwire: authentication failed", "user", c.user, "remote", c.nc.RemoteAddr().String())
	if fo, ok := c.srv.opts.Authenticator.(FailureObserver); ok {
		fo.AuthFailed(c.user)
	}
	if g := c.srv.opts.Gate; g != nil {
		query.LoginFailed(g, c.login(scram))
	}
	return c.fatal(sqlstate.InvalidPassword, fmt.Sprintf("password authentication failed for user %q", c.user))
}

// authSCRAM runs the exchange against verifier; a mock one (an unknown user's) goes through
// every step and the same checks, then fails as a wrong password does.
func (c *conn) authSCRAM(verifier string, mock bool) error {
	v, err := parseSCRAMVerifier(verifier)
	if err != nil {
		c.srv.log.Error("pgwire: stored SCRAM verifier unusable", "user", c.user, "err", redact.Error(err))
		return c.authFailed(true)
	}
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := c.flush(); err != nil {
		return err
	}
	_ = c.be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := c.be.Receive()
	if err != nil {
		return err
	}
	initial, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || initial.AuthMechanism != "SCRAM-SHA-256" {
		return c.fatal(sqlstate.InvalidAuthorizationSpecification, "expected a SCRAM-SHA-256 SASL initial response")
	}
	sc := &scramServer{v: v}
	serverFirst, err := sc.first(string(initial.Data))
	if err != nil {
		return c.fatal(sqlstate.ProtocolViolation, err.Error())
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := c.flush(); err != nil {
		return err
	}
	_ = c.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	msg, err = c.be.Receive()
	if err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return c.fatal(sqlstate.ProtocolViolation, "expected a SASL response")
	}
	serverFinal, err := sc.final(string(resp.Data))
	if err != nil || mock {
		return c.authFailed(true)
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(serverFinal)})
	return nil
}

// Package mysqlengine runs queries on MySQL, MariaDB and StarRocks (which speaks the MySQL
// protocol) through go-mysql's client, and streams results as Arrow record batches, or, for
// the MySQL frontend's passthrough, hands over a COM_QUERY's result packets as they came
// (QueryRaw).
//
// It may touch the network (one TCP connection per running query, pooled) and start goroutines:
// one reads each result from its connection while the caller pulls batches.
//
// determinism: outside the simulator (real engine adapter over TCP)
package mysqlengine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// OpenSpec opens a Spec of kind mysql or starrocks. Option "tls": "verify-full" or "true" (verify the server's
// certificate and that it names the endpoint's host), "verify-ca" (verify the certificate
// only), "skip-verify" (encrypt without verifying), "false" or absent (no TLS). Option
// "tlsCAFile" is the CA bundle to verify against (default: the system's roots).
func OpenSpec(s engine.Spec) (query.Engine, error) {
	cfg := Config{Name: s.Name, Addr: s.Endpoint, User: s.User, Password: s.Password, Database: s.Database, MaxConns: s.MaxConns}
	switch mode := s.Options["tls"]; mode {
	case "", "false":
	case "true", "verify-full", "verify-ca", "skip-verify":
		host, _, err := net.SplitHostPort(s.Endpoint)
		if err != nil {
			host = s.Endpoint
		}
		if cfg.TLS, err = clientTLS(host, mode, s.Options["tlsCAFile"]); err != nil {
			return nil, fmt.Errorf("mysqlengine %q: option tlsCAFile: %w", s.Name, err)
		}
	default:
		return nil, fmt.Errorf("mysqlengine %q: option tls=%q: want verify-full (or true), verify-ca, skip-verify or false", s.Name, mode)
	}
	return Open(cfg)
}

// clientTLS is the engine connections' TLS for a tls option mode.
func clientTLS(host, mode, caFile string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: mode == "skip-verify"}
	if caFile != "" {
		pool, err := certs.Pool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if mode == "verify-ca" {
		// Go verifies chain and host name together: skip both, then verify the chain alone.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: cfg.RootCAs, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// Config names one MySQL-protocol server.
type Config struct {
	Name     string // for errors
	Addr     string // host:port
	User     string
	Password string // never logged, never in errors
	Database string // default database; a request's Schema or Database overrides it
	MaxConns int    // connections (and so queries) at once; 0 means 16
	// BatchRows caps the rows in one record batch; 0 means 1024.
	BatchRows int
	// DialTimeout bounds connecting; 0 means 10s.
	DialTimeout time.Duration
	// TLS, when set, encrypts every connection.
	TLS *tls.Config
	// LoopHoldIdle is how long a client may keep a loop connection idle between its
	// statements before it goes back to the pool (loophold.go); 0 means 100ms.
	LoopHoldIdle time.Duration
}

const (
	maxConnsDefault  = 16
	batchRowsDefault = 1024
	idleConnsMax     = 8
)

// Engine is a pool of connections to one server. Safe for concurrent use.
type Engine struct {
	cfg   Config
	slots *slots // one per connection allowed at once
	// caps caches the capabilities the passthrough relay must honour (caps* flags; 0 until
	// the first relayed query).
	caps atomic.Int32
	// metadataOffer is whether the server offers MariaDB's extended metadata, as the last
	// connection opened found (offerUnknown, offered, notOffered; metadata.go).
	metadataOffer atomic.Int32
	// dialOptions are extra go-mysql client options for new connections (tests).
	dialOptions []client.Option
	// onKillWaited, when set (tests), learns how each kill's wait for its statement's end
	// ended: gone is false when the statement was still listed at killWaitMax, or the process
	// list could not be read.
	onKillWaited func(gone bool)
	// onKillSent, when set (tests), is called after a kill's first KILL QUERY answered.
	onKillSent func()

	mu sync.Mutex
	// idle and loopIdle (loop connections, loopconn.go) are the idle connections by the
	// client flags they were opened with (flags.go), up to idleConnsMax of each set.
	idle     [flagSets][]*client.Conn
	loopIdle [flagSets][]*LoopConn
	stmts    map[*client.Conn]stmtCache // statements prepared on each open connection
	closed   bool
	holds    holds       // loop connections kept by their clients between statements (loophold.go)
	noLoop   atomic.Bool // the server's connections cannot go on an event loop (loopconn.go)
}

// Database is the database the engine's connections start in (its configuration's).
func (e *Engine) Database() string { return e.cfg.Database }

// Open checks cfg and returns an engine; it connects lazily.
func Open(cfg Config) (*Engine, error) {
	if cfg.Addr == "" {
		return nil, fmt.Errorf("mysqlengine %q: empty address", cfg.Name)
	}
	if cfg.User == "" {
		return nil, fmt.Errorf("mysqlengine %q: empty user", cfg.Name)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = maxConnsDefault
	}
	if cfg.BatchRows <= 0 {
		cfg.BatchRows = batchRowsDefault
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	e := &Engine{cfg: cfg, slots: newSlots(cfg.MaxConns), stmts: map[*client.Conn]stmtCache{}}
	e.slots.wanted, e.holds.idle = e.reclaimHeld, cfg.LoopHoldIdle
	return e, nil
}

// Ping opens (or reuses) a connection and pings the server.
//
// With every connection slot in use (queries running, or clients that never read the results
// they asked for) the engine is busy, not down: a ping that waited for a slot until the health
// check's timeout marked the cluster unhealthy, and every other client of its group was refused
// at once ("no enabled, healthy cluster") instead of queued. Such a ping dials a connection of
// its own, outside the cap, and closes it after.
func (e *Engine) Ping(ctx context.Context) error {
	if !e.slots.tryTake() {
		c, err := e.dialWith(ctx, e.handshakeDialer, 0)
		if err != nil {
			return err
		}
		err = c.Ping()
		e.forget(c)
		_ = c.Close()
		return e.wrap(err)
	}
	e.slots.give()
	c, err := e.acquire(ctx, 0)
	if err != nil {
		return err
	}
	err = c.Ping()
	e.release(c, err == nil)
	return e.wrap(err)
}

// Close closes idle connections; running queries keep theirs until they finish.
// EngineUser is the user the engine logs in as (engine.UserNamer).
func (e *Engine) EngineUser() string { return e.cfg.User }

func (e *Engine) Close() error {
	e.mu.Lock()
	idle, loopIdle := e.idle, e.loopIdle
	e.idle, e.loopIdle, e.closed = [flagSets][]*client.Conn{}, [flagSets][]*LoopConn{}, true
	e.holds.shut.Store(true)
	e.mu.Unlock()
	e.reclaimHeld()
	for _, set := range idle {
		for _, c := range set {
			e.forget(c)
			_ = c.Close()
		}
	}
	for _, set := range loopIdle {
		e.closeLoopIdle(set)
	}
	return nil
}

// acquire takes a slot and a connection opened with flags; release gives both back.
func (e *Engine) acquire(ctx context.Context, flags connFlags) (*client.Conn, error) {
	if err := e.slots.take(ctx); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.slots.give()
		return nil, fmt.Errorf("mysqlengine %q: closed", e.cfg.Name)
	}
	if n := len(e.idle[flags]); n > 0 {
		c := e.idle[flags][n-1]
		e.idle[flags] = e.idle[flags][:n-1]
		e.mu.Unlock()
		return c, nil
	}
	e.mu.Unlock()
	c, err := e.dialWith(ctx, e.handshakeDialer, flags)
	if err != nil {
		e.slots.give()
		return nil, err
	}
	return c, nil
}

func (e *Engine) release(c *client.Conn, healthy bool) {
	defer e.slots.give()
	if c == nil {
		return
	}
	// A connection left inside a transaction (a BEGIN without COMMIT) must not serve another
	// request: closing it rolls the transaction back.
	healthy = healthy && !c.IsInTransaction()
	flags := flagsOf(c)
	e.mu.Lock()
	if healthy && !e.closed && len(e.idle[flags]) < idleConnsMax {
		e.idle[flags] = append(e.idle[flags], c)
		e.mu.Unlock()
		return
	}
	delete(e.stmts, c)
	e.mu.Unlock()
	_ = c.Close()
}

// dialWith connects through dialer with flags and extra client options.
func (e *Engine) dialWith(ctx context.Context, dialer client.Dialer, flags connFlags, extra ...client.Option) (*client.Conn, error) {
	opts := append(append([]client.Option{e.tlsOption, flags.option}, e.dialOptions...), extra...)
	var g *greetConn
	dialer = greeter(dialer, flags&flagExtendedMetadata != 0, &g)
	c, err := client.ConnectWithDialer(ctx, "", e.cfg.Addr, e.cfg.User, e.cfg.Password, e.cfg.Database, dialer, opts...)
	for refused := time.Now(); err != nil && atConnectionLimit(err) && e.makeRoom(ctx, refused); { // shed.go
		c, err = client.ConnectWithDialer(ctx, "", e.cfg.Addr, e.cfg.User, e.cfg.Password, e.cfg.Database, dialer, opts...)
	}
	if err != nil { // names the address, user and database: for the log only
		return nil, e.unreachable(err)
	}
	e.greeted(c, g)
	// The handshake's deadline must not outlive it: queries may run longer.
	if err := c.SetDeadline(time.Time{}); err != nil {
		_ = c.Close()
		return nil, e.unreachable(err)
	}
	// TIMESTAMP values then arrive in UTC, which is what their Arrow type says. go-mysql logs in
	// with collation 255 (utf8mb4_0900_ai_ci), which MariaDB does not know: it then gives the
	// session its server's character set, latin1 unless configured (MariaDB's own default
	// before 11.6), and text the proxy reads and relays as UTF-8 would be latin1's bytes.
	// A client's other collation (flags.go) is named in the handshake, and set again here for
	// a MariaDB greeting, which would otherwise take the server's.
	setup := "SET time_zone = '+00:00'"
	if col := flags.collation(); g.mariadb || flags&flagCollation != 0 {
		setup += ", NAMES " + col.Charset + " COLLATE " + col.Name
	}
	if _, err := c.Execute(setup); err != nil {
		_ = c.Close()
		return nil, e.wrap(err)
	}
	return c, nil
}

// handshakeDialer connects within DialTimeout and gives the connection a deadline (ctx's, or
// DialTimeout from now): go-mysql's handshake has none of its own, so a server that accepts and
// never answers would hold the dial, and a pool slot, forever.
func (e *Engine) handshakeDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: e.cfg.DialTimeout}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(e.cfg.DialTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := conn.SetDeadline(deadline); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

func (e *Engine) tlsOption(c *client.Conn) error {
	if e.cfg.TLS != nil {
		c.SetTLSConfig(e.cfg.TLS.Clone())
	}
	return nil
}

// kill asks the server to stop the statement running on c (KILL QUERY from another
// connection) and returns once the statement is gone (killQuery). When that cannot be done
// (the server is unreachable, refuses another connection), c itself is cut: its reader ends at
// once, giving its slot back, rather than when the statement ends on its own, and the server
// stops the statement when it next writes to c. c must not go back to the pool once kill may
// have run.
func (e *Engine) kill(c *client.Conn) { e.killWhile(c, nil) }

// killWhile is kill, with pending (nil: not known) reporting that the statement has not
// answered yet: while it has not, the kill is not done (killQuery).
func (e *Engine) killWhile(c *client.Conn, pending func() bool) {
	if e.killQuery(c.GetConnectionID(), pending) != nil {
		cut(c)
	}
}

// onceKill is a statement's kill (Engine.kill) that runs once, whoever asks first (a cancel
// hook, the statement's end): a second caller waits for the first's, and all return once the
// statement is gone.
type onceKill struct{ once sync.Once }

func (k *onceKill) kill(e *Engine, c *client.Conn) { k.once.Do(func() { e.kill(c) }) }

// cut closes c's socket under whoever reads or writes it, without a word to the server: the
// server's next write to it fails, and with it the statement writing (one blocked writing a
// result nobody reads fails at once). A loop connection's socket is shut down rather than
// closed: its loop may still hold it.
func cut(c *client.Conn) {
	if s, ok := c.Conn.Conn.(interface{ Shutdown() error }); ok {
		_ = s.Shutdown()
		return
	}
	_ = c.Conn.Conn.Close()
}

// dialAdmin opens a connection, in no database, for statements about other connections
// (KILL QUERY, the process list).
func (e *Engine) dialAdmin(ctx context.Context) (*client.Conn, error) {
	return client.ConnectWithDialer(ctx, "", e.cfg.Addr, e.cfg.User, e.cfg.Password, "", e.handshakeDialer, e.tlsOption)
}

// killQuery runs KILL QUERY id on a fresh connection, then waits, up to killWaitMax in all,
// until the server's process list no longer shows a statement on id (a killed one stays
// listed, as "Killed", until it ends) and pending (when known) says the statement answered:
// KILL QUERY answers once the statement is flagged, and a reader that stopped reading would
// otherwise give its slot back while the statement still ran. While it waits it sends KILL
// QUERY again: MariaDB forgets one that lands before the thread read the statement (it clears
// the flag as it starts a command), and the statement then runs to its end. (A connection
// that was killed serves no other statement, so a KILL sent again reaches none.)
// A connection the server no longer knows ran its last statement already. A server whose
// process list cannot be read (an older StarRocks) is not waited for.
func (e *Engine) killQuery(id uint32, pending func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), killWaitMax)
	defer cancel()
	c, err := e.dialAdmin(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ids := strconv.FormatUint(uint64(id), 10)
	if _, err := c.Execute("KILL QUERY " + ids); err != nil {
		if me, ok := serverError(err); ok && me.Code == mysql.ER_NO_SUCH_THREAD {
			e.killWaited(true)
			return nil
		}
		return err
	}
	if e.onKillSent != nil {
		e.onKillSent()
	}
	e.killWaited(waitStatementGone(c, ids, pending))
	return nil
}

// How long killQuery may take, and how often it looks for the killed statement's end: first
// after killPollFirst, then twice as long each time, up to killPollMax (a statement blocked
// writing a result may take a while to notice; most end at once).
const (
	killWaitMax   = 5 * time.Second
	killPollFirst = 5 * time.Millisecond
	killPollMax   = 100 * time.Millisecond
)

// waitStatementGone polls the process list of admin's server until connection ids runs no
// statement and pending (nil: not known) says it answered, within killWaitMax, sending KILL
// QUERY ids again before each look after the first; it reports whether it saw that.
func waitStatementGone(admin *client.Conn, ids string, pending func() bool) bool {
	deadline := time.Now().Add(killWaitMax)
	for pause := killPollFirst; ; pause = min(2*pause, killPollMax) {
		res, err := admin.Execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " + ids + " AND INFO IS NOT NULL")
		if err != nil {
			return false
		}
		if n, _ := res.GetInt(0, 0); n == 0 && (pending == nil || !pending()) {
			return true
		}
		if time.Now().Add(pause).After(deadline) {
			return false
		}
		time.Sleep(pause)
		if _, err := admin.Execute("KILL QUERY " + ids); err != nil {
			me, ok := serverError(err)
			return ok && me.Code == mysql.ER_NO_SUCH_THREAD
		}
	}
}

// killWaited tells the test hook, if any, how a kill's wait ended (gone: the statement was
// seen to end).
func (e *Engine) killWaited(gone bool) {
	if e.onKillWaited != nil {
		e.onKillWaited(gone)
	}
}

// wrap turns a server error into a *query.Error with the server's SQLSTATE; network and
// driver errors become CodeEngine. The message never carries the password.
func (e *Engine) wrap(err error) error {
	if err == nil {
		return nil
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if me, ok := serverError(err); ok {
		code := me.State
		if code == "" || code == mysql.DEFAULT_MYSQL_STATE {
			code = query.CodeEngine
		}
		return &query.Error{Code: code, Message: fmt.Sprintf("%s (MySQL error %d)", me.Message, me.Code)}
	}
	msg := err.Error()
	if e.cfg.Password != "" {
		msg = strings.ReplaceAll(msg, e.cfg.Password, "***")
	}
	detail := fmt.Errorf("mysql engine %q: %s", e.cfg.Name, msg)
	var ne net.Error
	if errors.Is(err, mysql.ErrBadConn) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// A broken connection's message names the engine's address: for the log only.
		return query.EngineUnavailable("", detail)
	}
	return &query.Error{Code: query.CodeEngine, Message: detail.Error(), Retryable: true}
}

// unreachable is a failure to reach the engine or log in to it: the client sees only that,
// the detail (which names the address, user and database) goes to the log.
func (e *Engine) unreachable(err error) error {
	w := e.wrap(err)
	var h *query.Hidden
	if errors.As(w, &h) { // a broken connection is hidden already: once is enough
		return w
	}
	return query.EngineUnavailable("", w)
}

// serverError is the server's ERR packet that err is, or wraps.
func serverError(err error) (*mysql.MyError, bool) {
	var me *mysql.MyError
	if errors.As(err, &me) || asMyError(err, &me) {
		return me, true
	}
	return nil, false
}

// asMyError unwraps pingcap/errors' stack wrappers, which predate errors.Unwrap in older paths.
func asMyError(err error, target **mysql.MyError) bool {
	type causer interface{ Cause() error }
	for i := 0; i < 16 && err != nil; i++ {
		if me, ok := err.(*mysql.MyError); ok {
			*target = me
			return true
		}
		c, ok := err.(causer)
		if !ok {
			return false
		}
		err = c.Cause()
	}
	return false
}

// acquireFor takes a pooled connection with q's client flags, switched to q's database.
func (e *Engine) acquireFor(ctx context.Context, q *query.Request) (*client.Conn, error) {
	return e.acquireWith(ctx, q, e.requestFlags(q))
}

// acquireWith is acquireFor of a connection with flags.
func (e *Engine) acquireWith(ctx context.Context, q *query.Request, flags connFlags) (*client.Conn, error) {
	c, err := e.acquire(ctx, flags)
	if err != nil {
		return nil, err
	}
	if db := requestDatabase(q); db != "" && db != c.GetDB() {
		if err := c.UseDB(db); err != nil {
			e.release(c, true)
			return nil, e.wrap(err)
		}
	}
	return c, nil
}

// Execute runs q on a pooled connection and streams its result.
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	c, err := e.acquireFor(ctx, q)
	if err != nil {
		return nil, err
	}
	q = trinoDialect(ctx, c, q)
	r := newRows(e, c, q, func(healthy bool) { e.release(c, healthy && !changesSession(q.SQL)) })
	go r.produce(ctx)
	if err := r.waitStart(ctx); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// requestDatabase picks the database a request names: its schema (Trino's catalog.schema
// puts the MySQL database there), else its database.
func requestDatabase(q *query.Request) string {
	if q.Schema != "" {
		return q.Schema
	}
	return q.Database
}

// commandTag names what a statement without rows did, Postgres-style ("INSERT 0 3", "UPDATE 2").
func commandTag(sql string, affected uint64) string {
	verb := strings.ToUpper(firstWord(sql))
	n := strconv.FormatUint(affected, 10)
	switch verb {
	case "INSERT", "REPLACE":
		return "INSERT 0 " + n
	case "UPDATE", "DELETE":
		return verb + " " + n
	case "":
		return "OK " + n
	default:
		return verb
	}
}

// assignsUserVariable reports whether a statement other than SET assigns a user variable:
// SELECT ... INTO @v, or @v := expr anywhere (a user variable lasts the connection's life,
// and the next client of a pooled connection would read it).
func assignsUserVariable(sql string) bool {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	for i, t := range toks {
		if t.Kind != sqltok.Operator || !strings.HasSuffix(t.Text, "@") || strings.HasSuffix(t.Text, "@@") || i+1 == len(toks) {
			continue
		}
		if t.Text == "@" && i > 0 && toks[i-1].IsWord("into") || i+2 < len(toks) && strings.HasPrefix(toks[i+2].Text, ":=") {
			return true
		}
	}
	return false
}

// firstWord is sql's first keyword after blanks and comments.
func firstWord(sql string) string { return sqltok.FirstKeyword(sql, sqltok.MySQL) }

// changesSession reports statements that leave state on their connection (session variables,
// user variables, table locks, named locks, temporary tables, prepared statements by name):
// that connection is closed afterwards instead of serving another request.
func changesSession(sql string) bool {
	if (strings.Contains(sql, "_lock") || strings.Contains(sql, "_LOCK")) && strings.Contains(strings.ToUpper(sql), "GET_LOCK") {
		return true
	}
	if strings.IndexByte(sql, '@') >= 0 && assignsUserVariable(sql) {
		return true
	}
	switch strings.ToUpper(firstWord(sql)) {
	case "SET", "LOCK", "PREPARE", "HANDLER":
		return true
	case "CREATE":
		return strings.Contains(strings.ToUpper(sql[:min(len(sql), 64)]), "TEMPORARY")
	}
	return false
}

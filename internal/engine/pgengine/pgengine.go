// Package pgengine runs queries on PostgreSQL through a pgx connection pool and streams the rows
// as Arrow record batches of at most engine.BatchRowsMax rows. Each column's PostgreSQL type is
// kept in the Arrow field metadata (pg.oid, pg.type, pg.typmod).
//
// Every statement runs on whichever pooled connection is free: session state (SET, BEGIN...)
// does not carry from one statement to the next.
//
// The relay (wire.go, raw.go: engine.PGWire, for clients the PostgreSQL frontend forwards) has
// connections of its own: opened by pgconn and taken over (Hijack), then written and read as
// wire messages. The pgx pool and the relay share one budget of MaxConns connections
// (budget.go): that is how many PostgreSQL sees.
//
// determinism: outside the simulator (real engine adapter: talks to PostgreSQL over the network)
package pgengine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/rawconn"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// Kind is this engine's kind (config clusters' engine).
const Kind = "postgres"

// Engine is a PostgreSQL cluster reached through a pgx pool.
type Engine struct {
	name string
	pool *pgxpool.Pool
	// argsFreeMode runs statements without arguments. Literal-only SQL (simple-protocol
	// clients) varies too much to be worth a prepared-statement cache entry each; one seen
	// before on the pool is prepared all the same (hot).
	argsFreeMode pgx.QueryExecMode
	hot          *hotStatements // the pool's statements without arguments seen before (hot.go); nil with exec_mode set
	raw          *rawPool       // the relay's connections (raw.go)
	database     string         // what a MySQL client's SHOW TABLES names when it chose no database
	shapes       shapes         // the results' schemas and decoders (shapes.go)
	notNull      notNullCache   // the NOT NULL columns of the tables MySQL clients sort (mysqlnotnull.go)
	zone         *serverZone
	// busy says a pooled connection could only be had once a running statement ends (ping.go).
	busy func() bool
}

// Database is the database the engine's connections are to: a MySQL client's default one.
func (e *Engine) Database() string { return e.database }

// connsDefault is an engine's connection budget when its spec sets none.
const connsDefault = 16

// cancelWaitMax bounds how long a cancelled statement may take to end on the server before its
// connection is closed instead (a frozen or unreachable server).
const cancelWaitMax = 5 * time.Second

var _ engine.Describer = (*Engine)(nil)

// Open builds the pool for spec. spec.Endpoint is "host:port" or a postgres:// URL; Database,
// User and Password override the URL's. Options are passed as connection parameters
// (sslmode, application_name, ...), except exec_mode (pgx's: cache_statement (default),
// cache_describe, describe_exec, exec, simple_protocol). No connection is made until first use.
func Open(spec engine.Spec) (query.Engine, error) {
	cfg, err := poolConfig(spec)
	if err != nil {
		return nil, fmt.Errorf("pgengine %q: %w", spec.Name, err)
	}
	size := spec.MaxConns
	if size <= 0 {
		size = connsDefault
	}
	conns := newBudget(size)
	cfg.MaxConns = int32(size)
	cfg.ConnConfig.AfterNetConnect = conns.afterNetConnect
	cfg.ConnConfig.BuildContextWatcherHandler = cancelOnServer
	tagSessions(cfg) // tag.go
	zone := &serverZone{}
	zone.noteOnConnect(cfg)
	plainDial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = rawconn.Dialer(plainDial, rawconn.Spin()) // pgx reads on goroutines: see rawconn
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("pgengine %q: %w", spec.Name, err)
	}
	argsFree, hot := pgx.QueryExecModeExec, newHotStatements()
	if _, set := spec.Options["exec_mode"]; set {
		argsFree, hot = cfg.ConnConfig.DefaultQueryExecMode, nil
	}
	rawCfg := cfg.ConnConfig.Config.Copy()
	rawCfg.DialFunc = plainDial // its sockets are lent to event loops as *net.TCPConn
	raw := newRawPool(rawCfg)
	raw.zone = zone
	conns.reclaim = func() bool {
		if raw.closeIdle() || closeIdlePgx(pool) {
			return true
		}
		raw.reclaimHeld() // given back, they are idle at the taker's next try
		return false
	}
	conns.waiting = &raw.holds.waiting
	raw.mustWait = func() bool { return conns.spent() && pool.Stat().IdleConns() == 0 }
	return &Engine{name: spec.Name, pool: pool, argsFreeMode: argsFree, hot: hot, raw: raw, shapes: newShapes(),
		database: cfg.ConnConfig.Database, zone: zone, busy: func() bool { return raw.mustWait() && !raw.hasIdle() }}, nil
}

// cancelOnServer is what a pooled connection does when the context of its statement ends: it
// sends PostgreSQL a cancel request and waits, up to cancelWaitMax, for the statement to end
// (its error and ReadyForQuery), which leaves the connection fit for the next statement.
// pgx's default closes the socket at once, and PostgreSQL does not notice a closed socket
// while it sleeps or scans: the statement would run on after its capacity slot was freed.
func cancelOnServer(pc *pgconn.PgConn) ctxwatch.Handler {
	return &resendingCancel{conn: pc}
}

// resendingCancel is pgconn's CancelRequestContextWatcherHandler (a cancel request, the
// connection's deadline cancelWaitMax away) that sends the request again while the statement
// has not answered (cancelResendFirst later, then twice as long each time up to
// cancelResendMax): PostgreSQL drops a request that lands while the backend waits for a
// message (the statement's, still on its way), and the statement then runs to its end, past
// the deadline, its connection closed and its slot freed. pgx calls HandleUnwatchAfterCancel
// once the statement answered; that stops the requests, and waits, as pgx's handler does, a
// little for one the server took to reach the backend before the connection serves again.
type resendingCancel struct {
	conn *pgconn.PgConn
	sent func() // called after each request (tests)
	stop context.CancelFunc
	done chan struct{}
}

func (h *resendingCancel) HandleCancel(context.Context) {
	deadline := time.Now().Add(cancelWaitMax)
	_ = h.conn.Conn().SetDeadline(deadline)
	ctx, stop := context.WithDeadline(context.Background(), deadline)
	h.stop, h.done = stop, make(chan struct{})
	go func() {
		defer close(h.done)
		for pause := cancelResendFirst; ; pause = min(2*pause, cancelResendMax) {
			_ = h.conn.CancelRequest(ctx)
			if h.sent != nil {
				h.sent()
			}
			select {
			case <-ctx.Done():
				time.Sleep(100 * time.Millisecond) // pgx's own wait for a request on its way
				return
			case <-time.After(pause):
			}
		}
	}()
}

func (h *resendingCancel) HandleUnwatchAfterCancel() {
	h.stop()
	<-h.done
	_ = h.conn.Conn().SetDeadline(time.Time{})
}

func poolConfig(spec engine.Spec) (*pgxpool.Config, error) {
	u := &url.URL{Scheme: "postgres"}
	if strings.Contains(spec.Endpoint, "://") {
		parsed, err := url.Parse(spec.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("endpoint is not a URL: %w", err)
		}
		u = parsed
	} else if spec.Endpoint != "" {
		if _, _, err := net.SplitHostPort(spec.Endpoint); err != nil {
			return nil, fmt.Errorf("endpoint %q is neither host:port nor a URL", spec.Endpoint)
		}
		u.Host = spec.Endpoint
	}
	password, _ := u.User.Password()
	user := u.User.Username()
	if spec.User != "" {
		user = spec.User
	}
	if spec.Password != "" {
		password = spec.Password
	}
	u.User = nil
	if user != "" {
		u.User = url.User(user)
	}
	if spec.Database != "" {
		u.Path = "/" + spec.Database
	}
	q := u.Query()
	keys := make([]string, 0, len(spec.Options))
	for k := range spec.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mode := pgx.QueryExecModeCacheStatement
	for _, k := range keys {
		if k == "exec_mode" {
			m, err := parseExecMode(spec.Options[k])
			if err != nil {
				return nil, err
			}
			mode = m
			continue
		}
		q.Set(k, spec.Options[k])
	}
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	// The password is set on the parsed config, never through a string that could be logged.
	cfg.ConnConfig.Password = password
	cfg.ConnConfig.DefaultQueryExecMode = mode
	return cfg, nil
}

func parseExecMode(s string) (pgx.QueryExecMode, error) {
	switch s {
	case "cache_statement":
		return pgx.QueryExecModeCacheStatement, nil
	case "cache_describe":
		return pgx.QueryExecModeCacheDescribe, nil
	case "describe_exec":
		return pgx.QueryExecModeDescribeExec, nil
	case "exec":
		return pgx.QueryExecModeExec, nil
	case "simple_protocol":
		return pgx.QueryExecModeSimpleProtocol, nil
	}
	return 0, fmt.Errorf("option exec_mode: unknown mode %q", s)
}

// Pool exposes the pool, for tests and for callers that need pgx directly.
func (e *Engine) Pool() *pgxpool.Pool { return e.pool }

// Ping checks that a connection can be made and answers.

// Close closes the pool and the relay's idle connections.
// EngineUser is the role the engine logs in as (engine.UserNamer).
func (e *Engine) EngineUser() string { return e.pool.Config().ConnConfig.User }

func (e *Engine) Close() error {
	e.pool.Close()
	e.raw.close()
	return nil
}

// binaryOIDs are the types decoded from PostgreSQL's binary format; all others arrive as text.
var binaryOIDs = pgx.QueryResultFormatsByOID{
	pgtype.BoolOID: pgx.BinaryFormatCode, pgtype.Int2OID: pgx.BinaryFormatCode,
	pgtype.Int4OID: pgx.BinaryFormatCode, pgtype.Int8OID: pgx.BinaryFormatCode,
	pgtype.Float4OID: pgx.BinaryFormatCode, pgtype.Float8OID: pgx.BinaryFormatCode,
	pgtype.ByteaOID: pgx.BinaryFormatCode, pgtype.DateOID: pgx.BinaryFormatCode,
	pgtype.TimeOID: pgx.BinaryFormatCode, pgtype.TimestampOID: pgx.BinaryFormatCode,
	pgtype.TimestamptzOID: pgx.BinaryFormatCode, pgtype.UUIDOID: pgx.BinaryFormatCode,
}

// querier is what runs a statement: the pool, or one pinned connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Execute runs q. Cancelling ctx cancels the statement on the server (cancelOnServer): once
// Execute, Next or Close returns, it no longer runs there.
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return e.execute(forStatement(ctx, q), e.pool, q)
}

var _ engine.SessionOpener = (*Engine)(nil)

// OpenSession pins one pooled connection for a client's transaction.
func (e *Engine) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	conn, err := e.pool.Acquire(forStatement(ctx, q))
	if err != nil {
		return nil, wrapErr(err)
	}
	return &session{e: e, conn: conn}, nil
}

type session struct {
	e    *Engine
	conn *pgxpool.Conn
	// pathMoved says a Trino client's USE moved the connection's search_path in the session
	// (followSearchPath): a ROLLBACK may have set it back, so the pool is told it is unknown.
	pathMoved bool
}

func (s *session) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	ctx = withSearchPath(ctx, q)
	if err := s.followSearchPath(ctx, q); err != nil {
		return nil, err
	}
	return s.e.execute(ctx, s.conn, q)
}

// TxStatus is the connection's status; a broken connection counts as idle, so the frontend
// lets go of it instead of pinning a dead session.
func (s *session) TxStatus() byte {
	pc := s.conn.Conn().PgConn()
	if pc.IsClosed() {
		return 'I'
	}
	return pc.TxStatus()
}

// Close returns the connection; pgxpool destroys one left inside a transaction.
func (s *session) Close() error {
	delete(s.conn.Conn().PgConn().CustomData(), sqlModeKey) // the client's sql_mode goes with it (mysqlsqlmode.go)
	resetLockWait(s.conn.Conn().PgConn())                   // and its innodb_lock_wait_timeout (mysqllockwait.go)
	if s.pathMoved {
		s.conn.Conn().PgConn().CustomData()[searchPathKey] = pathUnknown // the next statement's retag sets it
	}
	s.conn.Release()
	return nil
}

func (e *Engine) execute(ctx context.Context, db querier, q *query.Request) (_ query.Rows, err error) {
	if q.Protocol == query.ProtocolMySQL {
		defer func() { err = e.mysqlError(ctx, q, err) }() // MariaDB's words (mysqlerrors.go)
	}
	args := make([]any, 0, len(q.Args)+2)
	args = append(args, binaryOIDs)
	if len(q.Args) == 0 {
		args = append(args, e.argsFreeMode)
	}
	args = append(args, q.Args...)
	// stop cancels the statement on the server when the rows are closed before their end: the
	// cancel of ctx the core handed down, or one of our own.
	stop := query.Stop(ctx)
	if stop == nil {
		ctx, stop = context.WithCancel(ctx)
	}
	sqlText, isShow, err := showSQL(q, e.database)
	var insertID *insertPlan
	if err != nil {
		stop()
		return nil, err
	}
	if isShow {
		defer func() { err = showError(err) }()
	} else {
		sqlText = numberedParams(q)
		if q.Protocol == query.ProtocolMySQL {
			if modes, ok := mysqlSQLModeSet(sqlText); ok { // mysqlsqlmode.go
				defer stop()
				return setSQLMode(ctx, db, sqlText, modes, q.Args)
			}
			if value, global, ok := mysqlLockWaitSet(sqlText); ok { // mysqllockwait.go
				defer stop()
				return setLockWait(ctx, db, value, global, q.Args)
			}
			sqlText, insertID = e.mysqlSQL(ctx, db, q, sqlText)
		}
	}
	var trino trinopg.Translation
	if q.Protocol == query.ProtocolTrino { // Trino's dialect: its SHOW, functions and column names
		if trino, err = trinopg.SQL(sqlText, trinopg.Session{Catalog: q.Database, Schema: q.Schema, Database: e.database}); err != nil {
			stop()
			return nil, err
		}
		sqlText = trino.SQL
		defer func() { placeInClientText(err, trino) }()
	}
	hot := len(q.Args) == 0 && e.hot != nil && db == querier(e.pool) && e.hot.again(sqlText) // hot.go
	if len(q.Args) > 0 || hot {
		sqlText = cachedUnder(ctx, sqlText)
	}
	if hot {
		args[1] = pgx.QueryExecModeCacheStatement
	}
	rows, err := e.query(ctx, db, sqlText, args)
	if hot && err == nil {
		var stale bool
		if rows, stale = primed(rows); stale {
			args[1] = e.argsFreeMode
			rows, err = e.query(ctx, db, sqlText, args)
		}
	}
	if err != nil && retypesParams(q) { // mysqlparamtypes.go
		if truths, ok := booleanParams(ctx, db, sqlText, q.Args, err); ok {
			copy(args[len(args)-len(truths):], truths)
			rows, err = db.Query(ctx, sqlText, args...)
		}
	}
	for tries := 0; err != nil && tries < len(q.Args) && retypesParams(q) && outsideTx(db); tries++ { // mysqlparamtypes.go
		typed, ok := typedParam(sqlText, untypedParam(ctx, db, sqlText, q.Args, err), q.Args)
		if !ok {
			break
		}
		sqlText = typed
		rows, err = db.Query(ctx, sqlText, args...)
	}
	if q.Protocol == query.ProtocolMySQL && !isShow && (err != nil || len(rows.FieldDescriptions()) == 0) {
		rows, insertID, err = e.mysqlBooleansAgain(ctx, db, q, rows, err, sqlText, args, hot, insertID)
	}
	if err != nil {
		err = cancelledOr(ctx, err) // before stop, which would make every error a cancellation
		stop()
		return nil, argCountErr(err) // pgx's check of the count comes here
	}
	if insertID != nil {
		defer stop()
		ids, err := readIDs(rows)
		if again, plan, ok := e.mysqlAgain(ctx, db, q, err, sqlText, args, hot); ok { // a refusal at its execution
			if rows, err = e.query(ctx, db, again, args); err == nil {
				ids, err = readIDs(rows)
			}
			insertID = plan
		}
		if err := cancelledOr(ctx, err); err != nil {
			return nil, argCountErr(err)
		}
		return insertIDTag(ctx, db, ids, insertID), nil
	}
	fields := rows.FieldDescriptions()
	if len(fields) == 0 {
		for rows.Next() {
		}
		rows.Close()
		e.notNull.followCommand(db, rows.CommandTag().String()) // a table's definition may have changed (mysqlnotnull.go)
		err := cancelledOr(ctx, rows.Err())
		stop()
		if err != nil {
			return nil, argCountErr(err) // PostgreSQL's refusal of the Bind comes here
		}
		return engine.TagRows(rows.CommandTag().String()), nil
	}
	fields = mysqlNames(q, fields)
	sh, err := e.shapes.of(fields, e.columnKeys(ctx, q, fields))
	if err != nil {
		stop()
		rows.Close()
		return nil, err
	}
	return engine.NewSourceStream(sh.builders, &result{ctx: ctx, rows: rows, fields: fields, decoders: sh.decoders, plain: sh.plain, stop: stop}), nil
}

// query runs sqlText on db. On the pool, under a query.Statement's end alone (trinohttp's
// statements), the connection taken runs it under a context that never ends, the Statement
// watched instead (watchedRows): pgx's own watch of the context (a context.AfterFunc, the
// statement's children map and its removal) cost about 4k instructions a statement (#22).
// mysqlBooleansAgain runs a MySQL client's statement once more when PostgreSQL refused it (err,
// or before any row: rows has no columns) for a 1 or 0 in a boolean column the cache did not
// know of (a table created through another worker or outside the proxy): written again from
// the catalog as it is now, outside a transaction (the refusal changed nothing). Otherwise
// rows (read to its end) and err are its answer. insertID: whether the insert id is read from
// the answer.
func (e *Engine) mysqlBooleansAgain(ctx context.Context, db querier, q *query.Request, rows pgx.Rows, err error, sqlText string, args []any, hot bool, insertID *insertPlan) (pgx.Rows, *insertPlan, error) {
	refusal := err
	if err == nil {
		for rows.Next() {
		}
		rows.Close()
		refusal = rows.Err()
	}
	again, plan, ok := e.mysqlAgain(ctx, db, q, refusal, sqlText, args, hot)
	if !ok && refusal != nil { // rows closed: their connection, back in the pool, may be running another statement
		return nil, insertID, refusal
	}
	if !ok {
		return rows, insertID, err
	}
	rows, err = e.query(ctx, db, again, args)
	return rows, plan, err
}

// mysqlAgain is a MySQL client's statement written again from the catalog as it is now, its
// insert id's plan, and true, when PostgreSQL's refusal (of sqlText, written from the cache)
// says the cache was stale, outside a transaction (the refusal changed nothing), and the text
// is another; args set for it.
func (e *Engine) mysqlAgain(ctx context.Context, db querier, q *query.Request, refusal error, sqlText string, args []any, hot bool) (string, *insertPlan, bool) {
	if refusal == nil || !e.notNull.forgetStale(refusal) || !outsideTx(db) {
		return "", nil, false
	}
	again, plan := e.mysqlSQL(ctx, db, q, numberedParams(q))
	if len(q.Args) > 0 || hot {
		again = cachedUnder(ctx, again)
	}
	if again == sqlText {
		return "", nil, false
	}
	if len(q.Args) == 0 {
		args[1] = e.argsFreeMode // not the hot path's cached statement: the text is another
	}
	return again, plan, true
}

// mysqlSQL is a MySQL client's statement sqlText written for PostgreSQL, and the plan its
// insert id is read from its answer with (mysqlinsertid.go; nil for none). An id the INSERT
// gives ahead of the ids it generates moves the sequence past it first.
func (e *Engine) mysqlSQL(ctx context.Context, db querier, q *query.Request, sqlText string) (string, *insertPlan) {
	outside := outsideTx(db)
	columns := func(table string) map[string]bool { return e.notNull.columns(ctx, db, table) }
	if !outside { // no guard in a transaction: its first sort of a table reads the columns again (mysqlnotnull.go)
		columns = func(table string) map[string]bool { return e.notNull.columnsInTx(ctx, db, table) }
	}
	notNull := notNullLookup{schema: q.Database, columns: columns, guarded: outside,
		booleans:  func(table string) map[string]bool { return e.notNull.booleans(ctx, db, table) },
		boolNames: func() *columnNames { return e.notNull.boolColumnNames(ctx, db) },
		generated: func(table string) generatedColumn { return e.notNull.generated(ctx, db, table) },
		order:     func(table string) []string { return e.notNull.order(ctx, db, table) }}
	mode := connSQLMode(db)
	sqlText = mysqlText(mysqlLastInsertID(sqlText, q.LastInsertID), mode, notNull) // MySQL's functions, NULLs sorted, as MariaDB's
	sqlText = withLockWaitReads(sqlText, db)
	sqlText, plan := mysqlInsertReturning(sqlText, notNull, q.Args, mode)
	if plan != nil {
		plan.raiseAhead(ctx, db)
	}
	return sqlText, plan
}

func (e *Engine) query(ctx context.Context, db querier, sqlText string, args []any) (pgx.Rows, error) {
	sc := (*query.Statement)(nil)
	if db == querier(e.pool) {
		sc = query.StatementOf(ctx)
	}
	if sc == nil {
		return db.Query(ctx, sqlText, args...)
	}
	c, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	h := &resendingCancel{conn: c.Conn().PgConn()}
	if err := sc.Arm(h); err != nil {
		c.Release()
		if errors.Is(err, query.ErrArmed) { // another statement of it is being read
			return db.Query(ctx, sqlText, args...)
		}
		return nil, err
	}
	w := &watchedRows{c: c, sc: sc, h: h}
	w.Rows, err = c.Conn().Query(context.WithoutCancel(ctx), sqlText, args...)
	if err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// watchedRows are rows read on a pooled connection under a context that never ends, their
// Statement armed with the connection's cancel (resendingCancel, as pgx arms it): closed, or
// read to their end, they disarm it (waiting, as pgx does, for a cancel under way to be
// answered) and give the connection back, as pgxpool's rows give it back.
type watchedRows struct {
	pgx.Rows
	c  *pgxpool.Conn
	sc *query.Statement
	h  *resendingCancel
}

func (r *watchedRows) Next() bool {
	if r.c == nil {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *watchedRows) Close() {
	if r.c == nil {
		return
	}
	if r.Rows != nil {
		r.Rows.Close()
	}
	if !r.sc.Disarm() {
		r.h.HandleUnwatchAfterCancel()
	}
	r.c.Release()
	r.c = nil
}

// placeInClientText moves the position of PostgreSQL's error err, if any, from the text t
// translated into the Trino client's own.
func placeInClientText(err error, t trinopg.Translation) {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) {
		pe.Position = t.Position(pe.Position)
	}
}

// result is a statement's rows as an engine.StreamSource.
type result struct {
	ctx      context.Context // the statement's: its end is the cancellation Fill reports
	rows     pgx.Rows
	fields   []pgconn.FieldDescription
	decoders []decoder
	plain    []plainDecoder     // nil unless every column has plain values (FillPlain)
	stop     context.CancelFunc // cancels the statement on the server when closed before its end
}

func (r *result) Fill(_ context.Context, b *engine.BatchBuilder) (bool, error) {
	for !b.Full() {
		if !r.rows.Next() {
			return false, cancelledOr(r.ctx, r.rows.Err())
		}
		raw := r.rows.RawValues()
		for i, dec := range r.decoders {
			if err := dec(raw[i], b.Field(i)); err != nil {
				return false, fmt.Errorf("pgengine: column %q: %w", r.fields[i].Name, err)
			}
		}
		b.EndRow()
	}
	return true, nil
}

func (r *result) Tag() string { return r.rows.CommandTag().String() }

func (r *result) Close() error {
	r.stop()
	r.rows.Close()
	return nil
}

// cancelledOr is err as the caller sees it: the cancellation itself when ctx ended (the
// server's "canceling statement due to user request" answered our cancel request), else err.
func cancelledOr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return wrapErr(err)
}

// Describe prepares q's SQL (unnamed statement) and reports its parameter and column types.
func (e *Engine) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	if q.Protocol == query.ProtocolMySQL {
		ctx = forStatement(ctx, q) // readied as its execution's connection (search_path, user)
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer conn.Release()
	if q.Protocol == query.ProtocolMySQL { // mysqldescribe.go
		return e.describeForMySQL(ctx, conn.Conn().PgConn(), q)
	}
	return describeOn(ctx, conn.Conn().PgConn(), q.SQL)
}

// Describe prepares q's SQL on the session's connection (it may use the transaction's work).
func (s *session) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	if q.Protocol == query.ProtocolMySQL {
		return s.e.describeForMySQL(ctx, s.conn.Conn().PgConn(), q)
	}
	return describeOn(ctx, s.conn.Conn().PgConn(), q.SQL)
}

func describeOn(ctx context.Context, pc *pgconn.PgConn, sql string) (*engine.Description, error) {
	sd, err := pc.Prepare(ctx, "", sql, nil)
	if err != nil {
		return nil, wrapErr(err)
	}
	d := &engine.Description{}
	for i, oid := range sd.ParamOIDs {
		d.Params = append(d.Params, engine.PGField(fmt.Sprintf("$%d", i+1), oid, -1))
	}
	if len(sd.Fields) > 0 {
		schema, _, err := schemaFor(sd.Fields)
		if err != nil {
			return nil, err
		}
		d.Schema = schema
	}
	return d, nil
}

func schemaFor(fields []pgconn.FieldDescription) (*arrow.Schema, []decoder, error) {
	afs := make([]arrow.Field, len(fields))
	decs := make([]decoder, len(fields))
	for i, f := range fields {
		afs[i] = engine.PGField(f.Name, f.DataTypeOID, f.TypeModifier)
		dec, err := decoderFor(f, afs[i].Type)
		if err != nil {
			return nil, nil, err
		}
		decs[i] = dec
	}
	return arrow.NewSchema(afs, nil), decs, nil
}

// argCountErr is err, or, when err says the arguments do not match the statement's parameters,
// the error duckengine gives then (42601, naming both counts: a client's mistake, which every
// frontend tells as such). pgx checks the count against the statement it prepared and answers
// with an error of its own (no SQLSTATE: an engine fault, 58000, to the frontends); without a
// prepared statement (exec_mode exec, and every statement without arguments), PostgreSQL refuses
// the Bind with 08P01, a protocol violation, which frontends tell as a broken connection.
func argCountErr(err error) error {
	var has, given int
	if _, e := fmt.Sscanf(err.Error(), "expected %d arguments, got %d", &has, &given); e == nil {
		return wrongArgCount(has, given)
	}
	var pe *pgconn.PgError
	var name string
	if errors.As(err, &pe) && pe.Code == sqlstate.ProtocolViolation {
		if _, e := fmt.Sscanf(pe.Message, "bind message supplies %d parameters, but prepared statement %q requires %d", &given, &name, &has); e == nil {
			return wrongArgCount(has, given)
		}
	}
	return err
}

func wrongArgCount(has, given int) error {
	return &query.Error{Code: sqlstate.SyntaxError, Message: fmt.Sprintf(
		"wrong number of parameters: the statement has %d, %d given", has, given)}
}

// pgError carries both the SQLSTATE view every frontend understands (*query.Error) and the
// full server error (*pgconn.PgError) that the PostgreSQL frontend forwards as is.
type pgError struct {
	q  *query.Error
	pg *pgconn.PgError
}

func (e *pgError) Error() string   { return e.q.Error() }
func (e *pgError) Unwrap() []error { return []error{e.q, e.pg} }

func wrapErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) { // names the engine's address, user and database: for the log only
		return query.EngineUnavailable("", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// PostgreSQL answers a statement_timeout and a cancel both 57014; its message tells them
		// apart (in English, the default lc_messages; any other reads as a cancel).
		timedOut := pe.Code == query.CodeQueryTimeout && strings.Contains(pe.Message, "statement timeout")
		return &pgError{q: &query.Error{Code: pe.Code, Message: pe.Message, TimedOut: timedOut}, pg: pe}
	}
	return err
}

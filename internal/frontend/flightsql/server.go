// Package flightsql is the Arrow Flight SQL frontend: CommandStatementQuery through
// GetFlightInfo and DoGet, statement updates, prepared statements (create, bind through DoPut,
// execute, close), GetCatalogs, GetDbSchemas and GetTables, with Basic or bearer-token auth;
// keys and type info (keys.go, typeinfo.go); transactions and savepoints on a pinned engine
// connection (txn.go, savepoints.go). Results travel as the backend's own Arrow batches.
//
// It serves gRPC and starts a goroutine per streamed result.
//
// determinism: outside the simulator (gRPC listener and Flight SQL protocol)
package flightsql

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
)

// Credentials are what a client presented: Basic (User, Password) or a bearer Token that the
// server did not issue itself.
type Credentials struct {
	User, Password, Token, ClientAddr string
}

// Authenticator is the auth hook. It returns the user the client acts as.
type Authenticator interface {
	Authenticate(ctx context.Context, c Credentials) (user string, err error)
}

// Options configure a Server.
type Options struct {
	// Registerer receives queryflux_frontend_bound_refusals_total; nil keeps it unregistered.
	Registerer prometheus.Registerer
	// Auth checks credentials; nil (with no Gate) lets every client in, as the user named by
	// the "x-queryflux-user" metadata (or "anonymous").
	Auth Authenticator
	// TLS, when set, is asked at each new connection that begins a TLS handshake for the
	// configuration to serve it with (TLS and plain gRPC then share the port).
	TLS func() *tls.Config
	// Gate, when set, decides every call before its password: a trusted client needs none
	// (Basic with any password, or only x-queryflux-user), a refused one is Unauthenticated.
	Gate query.Gate
	// TokenTTL is how long a bearer token from the handshake stays valid; default 1h.
	TokenTTL time.Duration
	// ResultTTL is how long an executed statement (which holds its engine query, and any
	// capacity lease, open) waits for its DoGet; default 1 minute.
	ResultTTL time.Duration
	// ResultsPerUserMax bounds the executed statements one user leaves waiting for their DoGet
	// (tickets not yet fetched, and statements being executed); past it GetFlightInfo is
	// refused with ResourceExhausted until the user fetches, cancels or lets some expire
	// (ResultTTL). Default resultsPerUserMaxDefault.
	ResultsPerUserMax int
	// PreparedIdleTTL is how long a prepared statement nobody binds, runs or describes is
	// kept; default 1 hour. Handles outlive connections (a gRPC client reconnects under its
	// handles after an idle close), so without it a client that never closes them (killed, or
	// a leak) holds its user's share for ever.
	PreparedIdleTTL time.Duration
	// TransactionIdleTTL is how long a transaction (BeginTransaction) may wait for its next
	// statement before it is rolled back; default 5 minutes. It holds a capacity slot and an
	// engine connection, and on the engine its locks.
	TransactionIdleTTL time.Duration
	// TransactionsPerUserMax bounds the transactions one user keeps open at once (each holds
	// an engine connection and a capacity slot); default transactionsPerUserMaxDefault.
	TransactionsPerUserMax int
	// Logger; nil discards.
	Logger *slog.Logger
	// Limits bound connections and the HTTP/2 handshake (zero fields: netlimit's defaults).
	Limits netlimit.Limits
	// MessageBytesMax bounds one gRPC message from a client; default 4 MiB. Calls are
	// authenticated one by one, so it applies before authentication too.
	MessageBytesMax int
	// Forward, on a worker, names this worker in every ticket and fetches tickets of other
	// workers from them.
	Forward *forward.Forwarder
}

// headerBytesMax bounds a call's metadata (gRPC's own default is 16 MiB).
const headerBytesMax = 256 << 10

// streamsMax bounds the calls open at once on one connection (gRPC's own default is
// unlimited, so one connection could hold any number of goroutines and buffers).
const streamsMax = 256

// clientPingMin is the shortest interval between a client's keepalive pings the server
// accepts; a client pinging more often is told to calm down (GOAWAY) and disconnected.
const clientPingMin = 10 * time.Second

// closeGraceMax bounds how long Close waits for running calls.
const closeGraceMax = 5 * time.Second

// Server is the Flight SQL frontend.
type Server struct {
	fsql.BaseServer
	backend query.Backend
	opts    Options
	log     *slog.Logger
	grpc    *grpc.Server

	ctx    context.Context // ends on Close; parent of results waiting for DoGet
	cancel context.CancelFunc

	mu      sync.Mutex
	results map[string]*pendingResult // by statement handle, until DoGet takes it
	// userResults counts each user's results stored in results or being executed to be;
	// resultsHeld is their sum (resultsPerUserMax, resultsMax).
	userResults map[string]int
	resultsHeld int
	prepared    map[string]*preparedStatement
	held        map[string]preparedHeld // each user's prepared statements, counted (prepared.go)
	tokens      map[string]issuedToken
	// userTokens are each user's live tokens, oldest first (tokensPerUserMax).
	userTokens map[string][]string
	serving    bool
	// txns are the open transactions by id (txn.go); userTxns counts each user's, and
	// txnsOpening those being begun.
	txns        map[string]*transaction
	userTxns    map[string]int
	txnsOpening int

	panics atomic.Int64 // recovered in call handlers (bugs: tests require none)

	refusals *prometheus.CounterVec // queryflux_frontend_bound_refusals_total
}

type pendingResult struct {
	rows    query.Rows
	cancel  context.CancelFunc
	created time.Time
	conn    uint64 // the client connection that executed it (connID)
	// user executed it: only that user's DoGet or cancel reaches it (a ticket another user
	// learns is unknown to them, and stays good for its own user).
	user string
}

type preparedStatement struct {
	sql  string
	args []any
	user string
	txID []byte // the transaction it runs in (CreatePreparedStatement's); nil: none
	// used is when the statement was last made, bound, run or described; one unused for
	// PreparedIdleTTL is forgotten (expireOnce).
	used time.Time
}

type issuedToken struct {
	user    string
	expires time.Time
}

// NewServer returns a server over backend.
func NewServer(backend query.Backend, opts Options) (*Server, error) {
	if backend == nil {
		return nil, errors.New("flightsql: nil backend")
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.ResultTTL <= 0 {
		opts.ResultTTL = time.Minute
	}
	if opts.PreparedIdleTTL <= 0 {
		opts.PreparedIdleTTL = time.Hour
	}
	if opts.TransactionsPerUserMax <= 0 {
		opts.TransactionsPerUserMax = transactionsPerUserMaxDefault
	}
	if opts.TransactionIdleTTL <= 0 {
		opts.TransactionIdleTTL = 5 * time.Minute
	}
	if opts.ResultsPerUserMax <= 0 {
		opts.ResultsPerUserMax = resultsPerUserMaxDefault
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{backend: backend, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		results: map[string]*pendingResult{}, userResults: map[string]int{}, prepared: map[string]*preparedStatement{}, held: map[string]preparedHeld{}, tokens: map[string]issuedToken{}, userTokens: map[string][]string{},
		txns: map[string]*transaction{}, userTxns: map[string]int{}}
	s.Alloc = memory.DefaultAllocator
	s.refusals = netlimit.BoundRefusals(opts.Registerer)
	for id, v := range sqlInfo(backend, false) { // DoGetSqlInfo answers each caller; these make GetFlightInfoSqlInfo answer
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return nil, fmt.Errorf("flightsql: sql info: %w", err)
		}
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.MessageBytesMax <= 0 {
		opts.MessageBytesMax = 4 << 20
	}
	s.opts = opts
	mw := s.authMiddleware()
	gopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(s.recoverUnary, mw.Unary), grpc.ChainStreamInterceptor(s.recoverStream, mw.Stream, s.sendBound),
		grpc.MaxRecvMsgSize(opts.MessageBytesMax), grpc.MaxHeaderListSize(headerBytesMax),
		grpc.ConnectionTimeout(opts.Limits.HandshakeTimeout), grpc.StatsHandler(&connEnds{ended: s.dropConn}),
		// A connection that started HTTP/2 and then makes no call (or only calls that fail
		// authentication at once) would hold a connection slot forever: close it once idle.
		// A connection with a call open is never idle, so a client whose network went silent (no
		// FIN, no RST: a host gone, a cable cut, a firewall dropping the flow) would keep its
		// calls, their buffers, engine queries and slots until TCP gave up, hours later: the
		// server pings a connection silent for KeepaliveTime and closes it when the ping goes
		// unanswered for KeepaliveTimeout.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: opts.Limits.IdleTimeout,
			Time: opts.Limits.KeepaliveTime, Timeout: opts.Limits.KeepaliveTimeout}),
		// Clients may ping as often as every clientPingMin, with or without a call open (gRPC's
		// own floor, 5 minutes, would end with GOAWAY the connections of clients configured to
		// ping every 30 s or so, a common setting).
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: clientPingMin, PermitWithoutStream: true}),
		grpc.MaxConcurrentStreams(streamsMax)}
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(certs.OptionalTLSCredentials(opts.TLS)))
	}
	s.grpc = grpc.NewServer(gopts...)
	flight.RegisterFlightServiceServer(s.grpc, fsql.NewFlightServer(s))
	return s, nil
}

// Serve serves gRPC on l until Close. A server serves one listener.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		return errors.New("flightsql: Serve called twice")
	}
	s.serving = true
	s.mu.Unlock()
	go s.expire()
	// gRPC has no "too many connections" answer before HTTP/2 starts: extra ones are closed.
	// gRPC authenticates calls, not connections: a connection counts in its source's share until
	// a call on it logged in (admit).
	l = netlimit.PerSource(l, s.opts.Limits.SourceConnectionsMax, nil, netlimit.SourceRefused("flightsql", s.refusals, s.log))
	err := s.grpc.Serve(netlimit.Listener(l, s.opts.Limits.ConnectionsMax, nil))
	if errors.Is(err, grpc.ErrServerStopped) {
		return net.ErrClosed
	}
	return err
}

// Close stops serving and cancels results nobody fetched.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	results := s.results
	s.results = map[string]*pendingResult{}
	s.userResults, s.resultsHeld = map[string]int{}, 0
	for _, h := range s.held {
		h.budget.Close() // the node's pool outlives this server (a frontend restarted)
	}
	s.mu.Unlock()
	for _, r := range results {
		r.drop()
	}
	// Graceful first; a client that stopped reading a stream must not hold Close forever. A
	// stopped server also makes a later Serve return at once.
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(closeGraceMax):
		s.grpc.Stop()
		<-stopped
	}
	s.endTxsWhere(func(*transaction) bool { return true })
	return nil
}

// cancelResult drops the stored result holding rows, if it is still stored.
func (s *Server) cancelResult(rows query.Rows) {
	s.mu.Lock()
	var found *pendingResult
	for h, r := range s.results {
		if r.rows == rows {
			found = r
			s.takeResultLocked(h, r)
		}
	}
	s.mu.Unlock()
	if found != nil {
		found.drop()
	}
}

// CancelFlightInfo stops the query behind a FlightInfo: its engine query is cancelled and its
// capacity slot freed at once, not when the unfetched result expires.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	if s.cancelInfo(ctx, req.GetInfo()) {
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
	}
	return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, nil
}

// CancelQuery is the older Flight SQL action of CancelFlightInfo.
func (s *Server) CancelQuery(ctx context.Context, req fsql.ActionCancelQueryRequest) (fsql.CancelResult, error) {
	if s.cancelInfo(ctx, req.GetInfo()) {
		return fsql.CancelResultCancelled, nil
	}
	return fsql.CancelResultNotCancellable, nil
}

// cancelInfo drops the stored results of the caller's user that info's endpoints name; false
// when none was stored (already fetched, finished, unknown or another user's).
func (s *Server) cancelInfo(ctx context.Context, info *flight.FlightInfo) bool {
	var dropped []*pendingResult
	user := userOf(ctx)
	s.mu.Lock()
	for _, ep := range info.GetEndpoint() {
		t, err := fsql.GetStatementQueryTicket(ep.GetTicket())
		if err != nil {
			continue
		}
		h := string(t.GetStatementHandle())
		if r, ok := s.results[h]; ok && r.user == user {
			dropped = append(dropped, r)
			s.takeResultLocked(h, r)
		}
	}
	s.mu.Unlock()
	for _, r := range dropped {
		r.drop()
	}
	return len(dropped) > 0
}

// Results waiting for their DoGet each hold an engine query open (its buffers, a capacity slot
// where the cluster has a cap) until fetched, cancelled, their connection ends or ResultTTL
// passes. A client that executes without fetching (a leak, or on purpose, over many connections)
// is bounded per user, so that it fills its own user's share and not the clusters' slots, and
// all together (trustLoopback logs any name in).
const (
	resultsPerUserMaxDefault = 32
	resultsMax               = 4_096
)

// reserveResult counts one more result for user, stored or being executed, or refuses it
// (ResourceExhausted) past user's bound or everyone's.
func (s *Server) reserveResult(user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.userResults[user]; n >= s.opts.ResultsPerUserMax {
		s.refusals.WithLabelValues("flightsql", "results").Inc()
		return status.Errorf(codes.ResourceExhausted,
			"user %q has %d executed statements waiting for their DoGet, the most one user may have (%d); fetch them (DoGet) or cancel them (CancelFlightInfo) first, or wait for them to expire (%s)",
			user, n, s.opts.ResultsPerUserMax, s.opts.ResultTTL)
	}
	if s.resultsHeld >= resultsMax {
		s.refusals.WithLabelValues("flightsql", "results").Inc()
		return status.Errorf(codes.ResourceExhausted,
			"this server has %d executed statements waiting for their DoGet, the most it allows; retry when some have been fetched or have expired (%s)",
			s.resultsHeld, s.opts.ResultTTL)
	}
	s.userResults[user]++
	s.resultsHeld++
	return nil
}

// releaseResultLocked gives back one of user's results (reserveResult).
func (s *Server) releaseResultLocked(user string) {
	n, ok := s.userResults[user]
	if !ok {
		return // counted before a Close that forgot every count
	}
	if n <= 1 {
		delete(s.userResults, user)
	} else {
		s.userResults[user] = n - 1
	}
	s.resultsHeld--
}

// takeResultLocked removes the stored result r under handle h and gives back its user's count.
func (s *Server) takeResultLocked(h string, r *pendingResult) {
	delete(s.results, h)
	s.releaseResultLocked(r.user)
}

func (p *pendingResult) drop() {
	p.cancel()
	p.rows.Close()
}

// expire drops results never fetched and tokens past their time.
func (s *Server) expire() {
	t := time.NewTicker(min(s.opts.ResultTTL/2, s.opts.PreparedIdleTTL/2, s.opts.TransactionIdleTTL/2, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.expireOnce(now)
		}
	}
}

func (s *Server) expireOnce(now time.Time) {
	s.mu.Lock()
	var stale []*pendingResult
	for h, r := range s.results {
		if now.Sub(r.created) > s.opts.ResultTTL {
			stale = append(stale, r)
			s.takeResultLocked(h, r)
		}
	}
	for tok, it := range s.tokens {
		if now.After(it.expires) {
			delete(s.tokens, tok)
		}
	}
	s.pruneUserTokensLocked()
	for h, p := range s.prepared {
		if now.Sub(p.used) > s.opts.PreparedIdleTTL {
			s.forgetLocked(h, p)
		}
	}
	s.mu.Unlock()
	for _, r := range stale {
		r.drop()
	}
	s.endTxsWhere(func(tx *transaction) bool { return now.Sub(tx.used) > s.opts.TransactionIdleTTL })
}

func newHandle() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("flightsql: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// toStatus turns an error into the gRPC status a client sees; the SQLSTATE leads the message.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var qe *query.Error
	switch {
	case errors.As(err, &qe):
		code := codeFor(qe.Code)
		if qe.Code == query.CodeQueryTimeout && !qe.TimedOut {
			code = codes.Canceled // cancelled by someone, not the statement's time limit
		}
		return status.Errorf(code, "[%s] %s", qe.Code, qe.Message)
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func codeFor(state string) codes.Code {
	switch state {
	case query.CodeNotConfigured:
		return codes.Unavailable
	case query.CodeQueueFull:
		return codes.ResourceExhausted
	case query.CodeCapacityTimeout:
		return codes.ResourceExhausted // not DeadlineExceeded: the client's deadline did not pass
	case query.CodeQueryTimeout:
		return codes.DeadlineExceeded
	case query.CodeLeaseLost:
		return codes.Aborted // gRPC's "retry at a higher level": the statement did not take effect
	case query.CodeEngineUnavailable, query.CodeCoordinationUnavailable:
		return codes.Unavailable
	case query.CodeAccessDenied:
		return codes.PermissionDenied
	case query.CodeNoRoute:
		return codes.NotFound
	case query.CodeNotEligible:
		return codes.FailedPrecondition
	case query.CodeLimitExceeded:
		return codes.ResourceExhausted
	case query.CodeEngine:
		return codes.Internal
	}
	switch {
	case strings.HasPrefix(state, "0A"):
		return codes.Unimplemented
	case strings.HasPrefix(state, "42"), strings.HasPrefix(state, "22"), strings.HasPrefix(state, "23"):
		return codes.InvalidArgument
	case strings.HasPrefix(state, "08"), strings.HasPrefix(state, "57"):
		return codes.Unavailable
	}
	return codes.Unknown
}

// execute runs sql for the calling user; the result lives past the RPC, until DoGet. Until
// unwatch is called, the RPC's end (the client's deadline or cancel) cancels the query.
func (s *Server) execute(ctx context.Context, txID []byte, sql string, args []any) (rows query.Rows, cancel context.CancelFunc, unwatch func() bool, err error) {
	tx, err := s.claimTx(ctx, txID)
	if err != nil {
		return nil, nil, nil, err
	}
	qctx, cancel := context.WithCancel(s.ctx)
	unwatch = context.AfterFunc(ctx, cancel)
	rows, err = s.runIn(qctx, tx, s.request(ctx, sql, args))
	if err != nil {
		unwatch()
		cancel()
		return nil, nil, nil, toStatus(contextOr(ctx, err))
	}
	return rows, cancel, unwatch, nil
}

// contextOr prefers the RPC's own end to the engine error it caused.
func contextOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// flightInfo executes sql and describes its result; the ticket names the stored rows. A client
// that gives up (its deadline, its cancel) while the statement starts stops it at once.
func (s *Server) flightInfo(ctx context.Context, txID []byte, sql string, args []any, desc *flight.FlightDescriptor) (info *flight.FlightInfo, err error) {
	user := userOf(ctx)
	if err := s.reserveResult(user); err != nil {
		return nil, err
	}
	stored := false
	defer func() {
		if !stored {
			s.mu.Lock()
			s.releaseResultLocked(user)
			s.mu.Unlock()
		}
	}()
	rows, cancel, unwatch, err := s.execute(ctx, txID, sql, args)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !unwatch() { // the RPC ended before its answer: nobody will fetch the rows
			s.cancelResult(rows)
			if err == nil { // and no answer says otherwise (gRPC may still deliver one)
				info, err = nil, toStatus(ctx.Err())
			}
		}
	}()
	schema := rows.Schema()
	if schema != nil {
		schema = outSchema(schema)
	}
	if schema == nil { // a statement without rows, run through the query path: an empty result
		if err := drain(ctx, rows); err != nil {
			cancel()
			rows.Close()
			return nil, toStatus(err)
		}
		schema = arrow.NewSchema(nil, nil)
	}
	handle := s.resultHandle()
	ticket, err := fsql.CreateStatementQueryTicket([]byte(handle))
	if err != nil {
		cancel()
		rows.Close()
		return nil, status.Errorf(codes.Internal, "ticket: %v", err)
	}
	s.mu.Lock()
	s.results[handle] = &pendingResult{rows: rows, cancel: cancel, created: time.Now(), conn: connID(ctx), user: user}
	stored = true // the reservation is the stored result's now: takeResultLocked gives it back
	s.mu.Unlock()
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

func drain(ctx context.Context, rows query.Rows) error {
	for {
		_, err := rows.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// GetFlightInfoStatement runs a CommandStatementQuery.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd fsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(ctx, cmd.GetTransactionId(), cmd.GetQuery(), nil, desc)
}

// DoGetStatement streams a result GetFlightInfo stored. Each ticket is good once. A DoGet its
// client cancels before this runs may never show its ticket here (gRPC hands the request of a
// reset call to no handler), so its result waits for CancelFlightInfo, the end of the client's
// connection, or ResultTTL.
func (s *Server) DoGetStatement(ctx context.Context, ticket fsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	handle := string(ticket.GetStatementHandle())
	if handle == sealedHandle { // a forwarded DoGet: its handle is sealed (the interceptor opened it)
		md, _ := metadata.FromIncomingContext(ctx)
		get, _, err := s.openSealedGet(md)
		if err != nil || first(md, strings.ToLower(forward.HeaderHop)) == "" {
			return nil, nil, errUnknownTicket
		}
		handle = get.Handle
	}
	s.mu.Lock()
	res, ok := s.results[handle]
	mine := ok && res.user == userOf(ctx)
	if mine {
		s.takeResultLocked(handle, res)
	}
	s.mu.Unlock()
	if ok && !mine {
		return nil, nil, errUnknownTicket // another user's: as if it did not exist, and left for its user
	}
	if !ok {
		return s.doGetElsewhere(ctx, handle)
	}
	schema := res.rows.Schema()
	if schema == nil {
		schema = arrow.NewSchema(nil, nil)
	}
	schema = outSchema(schema)
	ch := make(chan flight.StreamChunk)
	go s.stream(ctx, res, ch)
	return schema, ch, nil
}

// stream sends every batch of res on ch, then closes both. The DoGet's end (the client's
// deadline, cancel or hang-up) stops the engine query even while it is computing the next batch.
func (s *Server) stream(ctx context.Context, res *pendingResult, ch chan<- flight.StreamChunk) {
	defer close(ch)
	defer res.drop()
	defer context.AfterFunc(ctx, res.cancel)()
	defer s.recoveredChunk(ctx, "DoGet", ch)
	if res.rows.Schema() == nil {
		return
	}
	conv := newBatchConverter(res.rows.Schema())
	for {
		batch, err := res.rows.Next(ctx)
		if err == io.EOF {
			return
		}
		var data arrow.RecordBatch
		if err == nil {
			data, err = conv.convert(batch)
		}
		if err != nil {
			select {
			case ch <- flight.StreamChunk{Err: toStatus(err)}:
			case <-ctx.Done():
			}
			return
		}
		pieces := splitBatch(data)
		for i, p := range pieces {
			select {
			case ch <- flight.StreamChunk{Data: p}: // the flight writer releases it
			case <-ctx.Done():
				for _, q := range pieces[i:] {
					q.Release()
				}
				return
			}
		}
	}
}

// DoPutCommandStatementUpdate runs a statement without rows and returns its count.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd fsql.StatementUpdate) (int64, error) {
	return s.update(ctx, cmd.GetTransactionId(), cmd.GetQuery(), nil)
}

func (s *Server) update(ctx context.Context, txID []byte, sql string, args []any) (int64, error) {
	tx, err := s.claimTx(ctx, txID)
	if err != nil {
		return 0, err
	}
	rows, err := s.runIn(ctx, tx, s.request(ctx, sql, args))
	if err != nil {
		return 0, toStatus(err)
	}
	defer rows.Close()
	if err := drain(ctx, rows); err != nil {
		return 0, toStatus(err)
	}
	return affected(rows.Tag()), nil
}

// affected reads the count at the end of a command tag ("INSERT 0 3" → 3); -1 when unknown.
func affected(tag string) int64 {
	i := strings.LastIndexByte(tag, ' ')
	var n int64
	if _, err := fmt.Sscan(tag[i+1:], &n); err != nil {
		return -1
	}
	return n
}

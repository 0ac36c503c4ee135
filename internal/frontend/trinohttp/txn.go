package trinohttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Transactions, as Trino's protocol has them: a client that can keep one (trino-go-client's
// BeginTx, JDBC's setAutoCommit(false)) sends X-Trino-Transaction-Id: NONE with START
// TRANSACTION, is told the transaction's id (X-Trino-Started-Transaction-Id), sends it with
// every statement until COMMIT or ROLLBACK, which tell it to drop it
// (X-Trino-Clear-Transaction-Id). The proxy keeps no connection between a client's requests
// otherwise; a transaction runs on one pinned engine connection (engine.SessionOpener: the
// core routes START TRANSACTION, takes a capacity slot for the transaction's life and pins a
// connection of the routed engine), one statement at a time, as the Flight SQL frontend's do.
//
// As in Trino, a statement that fails in a transaction aborts it: later statements fail with
// TRANSACTION_ALREADY_ABORTED until ROLLBACK (a COMMIT rolls it back and says so), whatever the
// engine would do (MariaDB goes on after an error). A transaction idle for
// Options.AbandonAfter (Trino's transaction.idle-timeout) is rolled back: it holds a slot and,
// on the engine, locks. A transaction lives on the worker that began it, whose owner id (on a
// worker of a fleet) its id begins with: a statement of it POSTed to another worker of the pool
// (a load balancer's next pick) is forwarded there whole (forwardTransaction), as follow-ups
// are by their query's id; when that worker is gone, so is the transaction (its engine
// session ended with it), and the statement fails with UNKNOWN_TRANSACTION saying so.

const (
	txHeader        = "X-Trino-Transaction-Id"
	txStartedHeader = "X-Trino-Started-Transaction-Id"
	txClearHeader   = "X-Trino-Clear-Transaction-Id"
	// noTransaction is the id a client that can keep a transaction sends outside one.
	noTransaction = "NONE"

	transactionsPerUserMax = 16
	transactionsMax        = 1024
)

// Trino's errors for transactions (StandardErrorCode).
var (
	codeUnknownTx      = trinoCode{20, "UNKNOWN_TRANSACTION", "USER_ERROR"}
	codeTxAborted      = trinoCode{22, "TRANSACTION_ALREADY_ABORTED", "USER_ERROR"}
	codeIncompatible   = trinoCode{27, "INCOMPATIBLE_CLIENT", "USER_ERROR"}
	errTxAborted       = &trinoFailure{codeTxAborted, "Current transaction is aborted, commands ignored until end of transaction block"}
	errNoClientTx      = &trinoFailure{codeIncompatible, "Client does not support transactions"}
	errNestedTx        = &trinoFailure{codeNotSupported, "Nested transactions not supported"}
	errTxUnsupportedBy = &trinoFailure{codeNotSupported, "Transactions need an engine that can pin a connection; this backend cannot"}
)

// trinoFailure is an error the frontend answers with a Trino error of its own choosing.
type trinoFailure struct {
	code trinoCode
	msg  string
}

func (f *trinoFailure) Error() string { return f.msg }

// transaction is one client transaction on a pinned engine session.
type transaction struct {
	id      string
	session engine.Session
	end     context.CancelFunc // ends the context the session was opened under
	user    string
	// free holds one token while no statement runs in the transaction: a statement takes it
	// and puts it back once its rows are closed. gone is closed when the transaction ended.
	free chan struct{}
	gone chan struct{}

	mu     sync.Mutex
	used   time.Time // when its last statement ended (or it began)
	failed bool      // a statement failed: only ROLLBACK (or COMMIT, which rolls back) is left
}

// transactionVerb is "start", "commit" or "rollback" for the statements that begin or end a
// transaction, "use" for USE (use.go), "" for any other.
func transactionVerb(sql string) string {
	p := &literalParser{s: sql}
	switch verb := p.word(); { // read once, not once for each case: every statement comes here
	case len(verb) == 3:
		if strings.EqualFold(verb, "USE") {
			return "use"
		}
	case len(verb) < 5 || len(verb) > 8: // none of the others: the common case, decided at once
	case wordIs(verb, "START"):
		if p.keyword("TRANSACTION") {
			return "start"
		}
	case wordIs(verb, "COMMIT"):
		return endVerb(p, "commit")
	case wordIs(verb, "ROLLBACK"):
		return endVerb(p, "rollback")
	}
	return ""
}

// endVerb is verb when the rest of a COMMIT or ROLLBACK is Trino's (nothing, or WORK), or
// TRANSACTION as engines take it; any other statement beginning with the word (COMMIT PREPARED
// 'gid', ROLLBACK TO SAVEPOINT s) is not the transaction's end: it is the engine's (the core
// refuses two-phase commit on every wire).
func endVerb(p *literalParser, verb string) string {
	if !p.keyword("WORK") {
		p.keyword("TRANSACTION")
	}
	if p.end() {
		return verb
	}
	return ""
}

// execute runs req: through the backend, or in the transaction its client names.
func (s *Server) execute(ctx context.Context, q *runningQuery, req *query.Request) (query.Rows, error) {
	id := req.Headers[txHeader]
	verb := transactionVerb(req.SQL)
	inTx := id != "" && id != noTransaction
	if verb == "use" {
		if _, header, ok, err := useStatement(req); ok {
			return s.use(ctx, q, req, header, err)
		}
		verb = "" // not Trino's USE: the engine's to read
	}
	switch {
	case verb == "start":
		return s.begin(ctx, q, req, id)
	case verb != "" && !inTx:
		return nil, errNotInTx
	case verb != "":
		return s.endTransaction(ctx, q, req, id, verb)
	case inTx:
		return s.runInTransaction(ctx, req, id)
	}
	return s.backend.Execute(ctx, req)
}

// begin opens a transaction for START TRANSACTION: a session of the engine it routes to, on
// which the statement runs (its isolation level and access mode are the engine's to take).
func (s *Server) begin(ctx context.Context, q *runningQuery, req *query.Request, id string) (query.Rows, error) {
	switch {
	case id == "":
		return nil, errNoClientTx
	case id != noTransaction:
		return nil, errNestedTx
	}
	opener, ok := s.backend.(engine.SessionOpener)
	if !ok {
		return nil, errTxUnsupportedBy
	}
	if err := s.reserveTransaction(req.User); err != nil {
		return nil, err
	}
	tx, err := s.openTransaction(ctx, opener, req)
	s.mu.Lock()
	s.txnsOpening--
	if err != nil {
		s.userTxns[req.User]--
		s.mu.Unlock()
		return nil, err
	}
	s.txns[tx.id] = tx
	s.mu.Unlock()
	q.setHeader(txStartedHeader, tx.id)
	return engine.TagRows("START TRANSACTION"), nil
}

// reserveTransaction counts one more transaction for user, or refuses it past the bounds.
func (s *Server) reserveTransaction(user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.userTxns[user] >= transactionsPerUserMax || len(s.txns)+s.txnsOpening >= transactionsMax {
		s.refusals.WithLabelValues("trinohttp", "transactions").Inc()
		return &query.Error{Code: query.CodeQueueFull, Retryable: true, Message: fmt.Sprintf(
			"user %q has %d open transactions of at most %d (and this server %d of %d); commit or roll back some first",
			user, s.userTxns[user], transactionsPerUserMax, len(s.txns)+s.txnsOpening, transactionsMax)}
	}
	s.userTxns[user]++
	s.txnsOpening++
	return nil
}

// openTransaction pins a session and runs the client's START TRANSACTION on it. The session
// lives past the statement, so it is opened under the server's context; the statement's end
// (a cancel) stops the opening.
func (s *Server) openTransaction(ctx context.Context, opener engine.SessionOpener, req *query.Request) (*transaction, error) {
	sctx, end := context.WithCancel(s.ctx)
	stop := context.AfterFunc(ctx, end)
	sess, err := opener.OpenSession(sctx, req)
	if err == nil {
		if err = startOn(sctx, sess, req); err != nil {
			sess.Close()
		}
	}
	if !stop() || err != nil {
		end()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	tx := &transaction{id: s.newTransactionID(), session: sess, end: end, user: req.User,
		free: make(chan struct{}, 1), gone: make(chan struct{}), used: time.Now()}
	tx.free <- struct{}{}
	return tx, nil
}

// startOn runs START TRANSACTION on sess as the client wrote it; where the engine refuses an
// isolation level in it (MariaDB, whose START TRANSACTION takes only an access mode), as SET
// TRANSACTION ISOLATION LEVEL, which sets the next transaction's, and START TRANSACTION with
// the other modes.
func startOn(ctx context.Context, sess engine.Session, req *query.Request) error {
	err := runToEnd(ctx, sess, req)
	isolation, rest, ok := isolationApart(req.SQL)
	if err == nil || !ok {
		return err
	}
	set, start := *req, *req
	set.SQL, start.SQL = "SET TRANSACTION "+isolation, "START TRANSACTION "+rest
	if runToEnd(ctx, sess, &set) != nil || runToEnd(ctx, sess, &start) != nil {
		return err // the engine's refusal of the statement as written says most
	}
	return nil
}

// isolationApart splits START TRANSACTION's modes into its ISOLATION LEVEL ... and the others
// (an access mode), comma-separated; ok is false when it names no isolation level.
func isolationApart(sql string) (isolation, rest string, ok bool) {
	toks := sqltok.SignificantTokens(sql, sqltok.Trino)
	if len(toks) < 2 {
		return "", "", false
	}
	var others []string
	for _, mode := range sqltok.SplitAtCommas(toks[2:]) {
		words := make([]string, 0, len(mode))
		for _, t := range mode {
			if t.Text != ";" {
				words = append(words, t.Text)
			}
		}
		text := strings.Join(words, " ")
		if len(words) > 2 && strings.EqualFold(words[0], "isolation") {
			isolation = text
		} else if text != "" {
			others = append(others, text)
		}
	}
	return isolation, strings.Join(others, ", "), isolation != ""
}

// newTransactionID is a random UUID, as Trino's transaction ids are; on a worker, its first
// group is the worker's owner id (8 hex digits, forward.OwnerID), which tells any worker of the
// fleet where the transaction lives (transactionOwner).
func (s *Server) newTransactionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	if s.opts.Forward != nil {
		h = s.opts.Forward.Self() + h[8:]
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// transactionOwner is the owner id of the worker a transaction id names (newTransactionID),
// when it names one other than this worker.
func (s *Server) transactionOwner(id string) (string, bool) {
	fwd := s.opts.Forward
	if fwd == nil || len(id) != 36 || id[8] != '-' || !forward.IsOwnerID(id[:8]) || id[:8] == fwd.Self() {
		return "", false
	}
	return id[:8], true
}

// forwardTransaction sends a statement of a transaction another worker holds (its id names
// the owner) to that worker, which answers the client, and reports true; false, for the
// statement to run here, when it names no other worker, was forwarded already, or the owner
// is gone (claim then says so). body is the statement the request carried.
func (s *Server) forwardTransaction(w http.ResponseWriter, r *http.Request, req *query.Request, body string) bool {
	owner, ok := s.transactionOwner(req.Headers[txHeader])
	if !ok || r.Header.Get(forward.HeaderHop) != "" {
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	if err := s.opts.Forward.ProxyHTTP(w, r, forward.Trino, owner); err != nil {
		s.log.Info("trinohttp: a transaction's owning worker is gone", "transaction", req.Headers[txHeader], "err", redact.Error(err))
		return false
	}
	return true
}

// runToEnd runs q on sess and reads its result to the end.
func runToEnd(ctx context.Context, sess engine.Session, q *query.Request) error {
	rows, err := sess.Execute(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		batch, err := rows.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		_ = batch
	}
}

// claim waits for tx, the caller's transaction id, to be free, and takes it; it fails with
// UNKNOWN_TRANSACTION for an id this server does not hold for user.
func (s *Server) claim(ctx context.Context, id, user string) (*transaction, error) {
	s.mu.Lock()
	tx, ok := s.txns[id]
	s.mu.Unlock()
	if _, elsewhere := s.transactionOwner(id); !ok && elsewhere {
		return nil, &trinoFailure{codeUnknownTx, "Unknown transaction ID: " + id + ". The worker that began it (" + id[:8] +
			") did not take this statement: it is gone, and its transaction was rolled back with it. Commands ignored until end of transaction block"}
	}
	if !ok || tx.user != user {
		return nil, &trinoFailure{codeUnknownTx, "Unknown transaction ID: " + id + ". Possibly expired? Commands ignored until end of transaction block"}
	}
	select {
	case <-tx.free:
	case <-tx.gone:
		return nil, &trinoFailure{codeUnknownTx, "Unknown transaction ID: " + id + ". Possibly expired? Commands ignored until end of transaction block"}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-tx.gone: // ended (idle) while this waited: the token is not to be used
		return nil, &trinoFailure{codeUnknownTx, "Unknown transaction ID: " + id + ". Possibly expired? Commands ignored until end of transaction block"}
	default:
	}
	return tx, nil
}

// release frees tx for its next statement; failed marks it aborted.
func (tx *transaction) release(failed bool) {
	tx.mu.Lock()
	tx.used = time.Now()
	tx.failed = tx.failed || failed
	tx.mu.Unlock()
	tx.free <- struct{}{}
}

func (tx *transaction) hasFailed() bool {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.failed
}

// runInTransaction runs req on its transaction's session; the transaction stays taken until
// the rows are closed, and is aborted if they fail.
func (s *Server) runInTransaction(ctx context.Context, req *query.Request, id string) (query.Rows, error) {
	tx, err := s.claim(ctx, id, req.User)
	if err != nil {
		return nil, err
	}
	if tx.hasFailed() {
		tx.release(false)
		return nil, errTxAborted
	}
	rows, err := tx.session.Execute(ctx, req)
	if err != nil {
		tx.release(true)
		return nil, err
	}
	return &txRows{Rows: rows, tx: tx}, nil
}

// endTransaction runs COMMIT or ROLLBACK on the transaction and unpins its session; a COMMIT
// of an aborted transaction rolls it back and fails, as Trino's does.
func (s *Server) endTransaction(ctx context.Context, q *runningQuery, req *query.Request, id, verb string) (query.Rows, error) {
	tx, err := s.claim(ctx, id, req.User)
	if err != nil {
		return nil, err
	}
	q.setHeader(txClearHeader, "true") // the transaction is over, whatever follows
	s.forgetTransaction(tx)
	defer s.closeTransaction(tx)
	failed := tx.hasFailed() || tx.session.TxStatus() == 'E'
	end := *req
	if failed {
		end.SQL = "ROLLBACK"
	}
	if err := runToEnd(ctx, tx.session, &end); err != nil {
		return nil, err
	}
	if verb == "commit" && failed {
		return nil, errTxAborted
	}
	if verb == "commit" {
		return engine.TagRows("COMMIT"), nil
	}
	return engine.TagRows("ROLLBACK"), nil
}

// forgetTransaction removes tx from the server; its session is the caller's to close.
func (s *Server) forgetTransaction(tx *transaction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txns[tx.id] != tx {
		return
	}
	delete(s.txns, tx.id)
	close(tx.gone)
	if s.userTxns[tx.user]--; s.userTxns[tx.user] <= 0 {
		delete(s.userTxns, tx.user)
	}
}

// closeTransaction unpins a forgotten transaction's session, rolling back what it left open.
func (s *Server) closeTransaction(tx *transaction) {
	tx.session.Close()
	tx.end()
}

// endIdleTransactions rolls back the transactions no statement used since before cutoff, and
// with all every one not running a statement (the server's close, once its statements ended).
func (s *Server) endIdleTransactions(cutoff time.Time, all bool) {
	s.mu.Lock()
	var idle []*transaction
	for _, tx := range s.txns { //determinism:ok each is ended on its own
		idle = append(idle, tx)
	}
	s.mu.Unlock()
	for _, tx := range idle {
		select {
		case <-tx.free: // not running a statement: taken, so none starts
		default:
			continue
		}
		tx.mu.Lock()
		stale := tx.used.Before(cutoff)
		tx.mu.Unlock()
		if !all && !stale {
			tx.free <- struct{}{}
			continue
		}
		s.forgetTransaction(tx)
		s.closeTransaction(tx)
	}
}

// txRows is a statement's result in a transaction: closing it frees the transaction for its
// next statement, and an error in it aborts the transaction.
type txRows struct {
	query.Rows
	tx     *transaction
	once   sync.Once
	failed bool
}

func (r *txRows) Next(ctx context.Context) (b arrow.RecordBatch, err error) {
	b, err = r.Rows.Next(ctx)
	if err != nil && !errors.Is(err, io.EOF) {
		r.failed = true
	}
	return b, err
}

func (r *txRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(func() { r.tx.release(r.failed) })
	return err
}

// setHeader sets a response header of every answer of q from now on.
func (q *runningQuery) setHeader(name, value string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := make(http.Header, len(q.header)+1)
	for k, v := range q.header {
		h[k] = v
	}
	h[name] = []string{value}
	q.header = h
}

package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Transactions (BeginTransaction, a statement naming the transaction, EndTransaction) run on
// one pinned engine connection (engine.SessionOpener: the proxy core routes BEGIN, takes a
// capacity slot for the transaction's life and pins a connection of the routed engine), as
// the PostgreSQL wire frontend does between BEGIN and COMMIT. A transaction is its user's
// (another user's id is unknown to them), runs one statement at a time (a result not yet
// fetched keeps the next statement out), and is rolled back when its client's connection ends
// or it stays idle for Options.TransactionIdleTTL: it holds a slot and, on the engine, locks.
const (
	transactionsPerUserMaxDefault = 16
	transactionsMax               = 1024
)

// transaction is one client transaction. Its fields other than session are guarded by
// Server.mu.
type transaction struct {
	session engine.Session
	end     context.CancelFunc // ends the context the session was opened under
	user    string
	conn    uint64    // the connection that began it (connID)
	used    time.Time // when its last statement finished (or it began)
	busy    bool      // a statement runs, or its result waits for its DoGet
	// broken is the failure of a statement that took the engine's transaction with it (its
	// connection ended: fenced for a lost lease, or killed). The transaction stays its client's
	// until ended: its statements and COMMIT answer broken, its ROLLBACK succeeds. Forgetting
	// it would let the client's next statements run outside any transaction.
	broken error
	// savepoints are the savepoints BeginSavepoint took, by id (savepoints.go).
	savepoints map[string]string
}

// BeginTransaction opens a transaction on the engine the statement BEGIN routes to.
func (s *Server) BeginTransaction(ctx context.Context, _ fsql.ActionBeginTransactionRequest) ([]byte, error) {
	opener, ok := s.backend.(engine.SessionOpener)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "transactions need an engine that can pin a connection")
	}
	user := userOf(ctx)
	if err := s.reserveTransaction(user); err != nil {
		return nil, err
	}
	tx, err := s.openTransaction(ctx, opener)
	if err != nil {
		s.mu.Lock()
		s.userTxns[user]--
		s.mu.Unlock()
		return nil, err
	}
	id := newHandle()
	s.mu.Lock()
	s.txns[id] = tx
	s.mu.Unlock()
	return []byte(id), nil
}

// reserveTransaction counts one more transaction for user, or refuses it past the bounds.
func (s *Server) reserveTransaction(user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.userTxns[user] >= s.opts.TransactionsPerUserMax:
		s.refusals.WithLabelValues("flightsql", "transactions").Inc()
		return status.Errorf(codes.ResourceExhausted,
			"user %q has %d open transactions, the most queryflux allows; commit or roll back some first", user, s.userTxns[user])
	case len(s.txns)+s.txnsOpening >= transactionsMax:
		s.refusals.WithLabelValues("flightsql", "transactions").Inc()
		return status.Errorf(codes.ResourceExhausted, "too many open transactions (%d)", transactionsMax)
	}
	s.userTxns[user]++
	s.txnsOpening++
	return nil
}

// openTransaction pins a session and runs BEGIN on it. The session lives past this call, so
// it is opened under the server's context; the call's end (deadline, cancel) stops the opening.
func (s *Server) openTransaction(ctx context.Context, opener engine.SessionOpener) (*transaction, error) {
	defer func() {
		s.mu.Lock()
		s.txnsOpening--
		s.mu.Unlock()
	}()
	sctx, end := context.WithCancel(s.ctx)
	stop := context.AfterFunc(ctx, end)
	begin := s.request(ctx, "BEGIN", nil)
	sess, err := opener.OpenSession(sctx, begin)
	if err == nil {
		err = runToEnd(sctx, sess, begin)
		if err != nil {
			sess.Close()
		}
	}
	if !stop() || err != nil {
		end()
		return nil, toStatus(contextOr(ctx, err))
	}
	return &transaction{session: sess, end: end, user: userOf(ctx), conn: connID(ctx), used: time.Now()}, nil
}

// runToEnd runs q on sess and reads its result to the end.
func runToEnd(ctx context.Context, sess engine.Session, q *query.Request) error {
	rows, err := sess.Execute(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	return drain(ctx, rows)
}

// endTransactionSQL is what each EndTransaction action runs.
var endTransactionSQL = map[fsql.EndTransactionRequestType]string{
	fsql.EndTransactionCommit:   "COMMIT",
	fsql.EndTransactionRollback: "ROLLBACK",
}

// endAction is the statement sqls gives an End call's action, or the call's InvalidArgument
// naming the action and those it takes (EndTransaction, EndSavepoint).
func endAction[A interface {
	~int32
	fmt.Stringer
}](call string, action A, sqls map[A]string) (string, error) {
	if sql, ok := sqls[action]; ok {
		return sql, nil
	}
	var takes []string
	for a := range sqls { //determinism:ok sorted below
		takes = append(takes, a.String())
	}
	slices.Sort(takes)
	return "", status.Errorf(codes.InvalidArgument, "%s: action %v is none of %s", call, action, strings.Join(takes, ", "))
}

// EndTransaction commits or rolls back a transaction of the caller's user and unpins it.
func (s *Server) EndTransaction(ctx context.Context, req fsql.ActionEndTransactionRequest) error {
	sql, err := endAction("EndTransaction", req.GetAction(), endTransactionSQL)
	if err != nil {
		return err
	}
	tx, err := s.takeTx(ctx, req.GetTransactionId(), true)
	if err != nil {
		return err
	}
	defer s.closeTx(tx)
	if tx.broken != nil {
		if sql == "ROLLBACK" {
			return nil // the engine's transaction ended with its connection
		}
		return tx.broken
	}
	failed := tx.session.TxStatus() == 'E'
	if err := runToEnd(ctx, tx.session, s.request(ctx, sql, nil)); err != nil && !(sql == "ROLLBACK" && leaseLost(err)) {
		return toStatus(contextOr(ctx, err))
	}
	if sql == "COMMIT" && failed {
		return status.Error(codes.Aborted, "25P02: the transaction had failed; COMMIT rolled it back")
	}
	return nil
}

// leaseLost reports whether err is the lost capacity lease's. A transaction whose lease was
// lost has nothing left to roll back: the control plane fenced its engine connection, and
// closeTx ends whatever a fence could not reach. Its ROLLBACK, the way out the error names,
// succeeds.
func leaseLost(err error) bool {
	var qe *query.Error
	return errors.As(err, &qe) && qe.Code == query.CodeLeaseLost
}

// txLocked is the caller's idle transaction id, or the error to answer.
func (s *Server) txLocked(ctx context.Context, id string) (*transaction, error) {
	tx, ok := s.txns[id]
	if !ok || tx.user != userOf(ctx) {
		return nil, status.Error(codes.NotFound, "unknown transaction (committed, rolled back, or ended with its connection or after idling)")
	}
	if tx.busy {
		return nil, status.Error(codes.FailedPrecondition,
			"the transaction's previous statement is still running or its result waits for its DoGet; fetch or cancel it first")
	}
	return tx, nil
}

// brokenBy is what a statement's failure err means for its transaction: the lost lease's
// error as it is (it says to roll back), or 25P02 naming the failure; both gRPC's Aborted.
func brokenBy(err error) error {
	if leaseLost(err) {
		return toStatus(err)
	}
	return status.Errorf(codes.Aborted, "[%s] the transaction ended when a statement failed and took its engine connection (%s); roll it back",
		sqlstate.InFailedSQLTransaction, status.Convert(toStatus(err)).Message())
}

// forgetTxLocked removes a transaction from the server; its session is the caller's to close.
func (s *Server) forgetTxLocked(id string, tx *transaction) {
	delete(s.txns, id)
	if s.userTxns[tx.user]--; s.userTxns[tx.user] <= 0 {
		delete(s.userTxns, tx.user)
	}
}

// closeTx unpins a forgotten transaction's session, rolling back whatever it left open.
func (s *Server) closeTx(tx *transaction) {
	tx.session.Close()
	tx.end()
}

// claimTx marks the caller's transaction id busy for one statement; nil id: no transaction.
func (s *Server) claimTx(ctx context.Context, id []byte) (*transaction, error) {
	if len(id) == 0 {
		return nil, nil
	}
	return s.takeTx(ctx, id, false)
}

// takeTx finds the caller's idle transaction id for a call: end (EndTransaction) forgets it,
// the caller then ending it, broken or not; otherwise it is claimed busy for one statement
// (claimTx, EndSavepoint), which a broken one refuses with its failure.
func (s *Server) takeTx(ctx context.Context, id []byte, end bool) (*transaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.txLocked(ctx, string(id))
	if err != nil {
		return nil, err
	}
	if end {
		s.forgetTxLocked(string(id), tx)
		return tx, nil
	}
	if tx.broken != nil {
		return nil, tx.broken
	}
	tx.busy = true
	return tx, nil
}

// releaseTx ends a statement of tx, which failed with err (nil: it did not). A transaction its
// own statement ended (a COMMIT sent as SQL) is over: it is forgotten and unpinned. One a
// failed statement ended is broken.
func (s *Server) releaseTx(tx *transaction, err error) {
	s.mu.Lock()
	tx.busy = false
	tx.used = time.Now()
	ended := tx.session.TxStatus() == 'I'
	if err != nil && ended && tx.broken == nil {
		tx.broken = brokenBy(err)
	}
	over := ended && tx.broken == nil
	if over {
		for id, t := range s.txns {
			if t == tx {
				s.forgetTxLocked(id, tx)
			}
		}
	}
	s.mu.Unlock()
	if over {
		s.closeTx(tx)
	}
}

// runIn runs q on tx's session, or through the backend without one; the transaction stays
// busy until the rows are closed.
func (s *Server) runIn(ctx context.Context, tx *transaction, q *query.Request) (query.Rows, error) {
	if tx == nil {
		return s.backend.Execute(ctx, q)
	}
	rows, err := tx.session.Execute(ctx, q)
	if err != nil {
		s.releaseTx(tx, err)
		return nil, err
	}
	return &txRows{Rows: rows, done: func(err error) { s.releaseTx(tx, err) }}, nil
}

// txRows is a transaction's result: closing it frees the transaction for its next statement.
type txRows struct {
	query.Rows
	once   sync.Once
	done   func(failed error)
	failed error // the result's own failure, if it failed
}

func (r *txRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := r.Rows.Next(ctx)
	if err != nil && err != io.EOF {
		r.failed = err
	}
	return b, err
}

func (r *txRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(func() { r.done(r.failed) })
	return err
}

// endTxsWhere forgets and rolls back the idle transactions keep says to end.
func (s *Server) endTxsWhere(end func(*transaction) bool) {
	var ended []*transaction
	s.mu.Lock()
	for id, tx := range s.txns {
		if !tx.busy && end(tx) {
			s.forgetTxLocked(id, tx)
			ended = append(ended, tx)
		}
	}
	s.mu.Unlock()
	for _, tx := range ended {
		s.closeTx(tx)
	}
}

// describeIn describes q on tx's session when it can (a table the transaction created is only
// visible there), else through the backend.
func (s *Server) describeIn(ctx context.Context, tx *transaction, q *query.Request) (*engine.Description, bool, error) {
	if tx != nil {
		if d, ok := tx.session.(engine.Describer); ok {
			desc, err := d.Describe(ctx, q)
			s.releaseTx(tx, err)
			return desc, true, err
		}
		s.releaseTx(tx, nil)
	}
	d, ok := s.backend.(engine.Describer)
	if !ok {
		return nil, false, nil
	}
	desc, err := d.Describe(ctx, q)
	return desc, true, err
}

// transactionInfo is the SqlInfo a client reads to learn whether it may begin transactions.
func transactionInfo(backend query.Backend) int32 {
	if _, ok := backend.(engine.SessionOpener); ok {
		return int32(fsql.SqlTransactionTransaction)
	}
	return int32(fsql.SqlTransactionNone)
}

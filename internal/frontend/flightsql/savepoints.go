package flightsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Savepoints (BeginSavepoint, EndSavepoint: JDBC's setSavepoint, releaseSavepoint and
// rollback(Savepoint)) are SAVEPOINT, RELEASE SAVEPOINT and ROLLBACK TO SAVEPOINT run on the
// transaction's pinned session. A savepoint's id names its transaction and the savepoint; the
// engine keeps the savepoints themselves, so one released, or undone by a rollback to an
// earlier one, is unknown to it and its error is the engine's.
const savepointsPerTransactionMax = 1024

// savepointRefuser is an engine whose sessions cannot roll back to a savepoint (DuckDB's).
type savepointRefuser interface{ RefusesRollbackToSavepoint() }

// BeginSavepoint takes a savepoint named as the client names it in its transaction.
func (s *Server) BeginSavepoint(ctx context.Context, req fsql.ActionBeginSavepointRequest) ([]byte, error) {
	name := req.GetName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "BeginSavepoint: a savepoint needs a name")
	}
	if len(req.GetTransactionId()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "BeginSavepoint: a savepoint is taken in a transaction; begin one first")
	}
	tx, err := s.claimTx(ctx, req.GetTransactionId())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	full := len(tx.savepoints) >= savepointsPerTransactionMax
	s.mu.Unlock()
	if full {
		s.releaseTx(tx, nil)
		return nil, status.Errorf(codes.ResourceExhausted, "the transaction has %d savepoints, the most queryflux keeps; release some first", savepointsPerTransactionMax)
	}
	if err := s.runSavepoint(ctx, tx, "SAVEPOINT ", name); err != nil {
		return nil, err
	}
	id := string(req.GetTransactionId()) + ":" + newHandle()
	s.mu.Lock()
	if tx.savepoints == nil {
		tx.savepoints = map[string]string{}
	}
	tx.savepoints[id] = name
	s.mu.Unlock()
	return []byte(id), nil
}

// endSavepointSQL is what each EndSavepoint action runs, before the savepoint's name.
var endSavepointSQL = map[fsql.EndSavepointRequestType]string{
	fsql.EndSavepointRelease:  "RELEASE SAVEPOINT ",
	fsql.EndSavepointRollback: "ROLLBACK TO SAVEPOINT ",
}

// EndSavepoint releases a savepoint or rolls back to it.
func (s *Server) EndSavepoint(ctx context.Context, req fsql.ActionEndSavepointRequest) error {
	verb, err := endAction("EndSavepoint", req.GetAction(), endSavepointSQL)
	if err != nil {
		return err
	}
	id := string(req.GetSavepointId())
	txID, _, ok := strings.Cut(id, ":")
	if !ok || txID == "" {
		return errUnknownSavepoint
	}
	tx, err := s.takeTx(ctx, []byte(txID), false)
	if err != nil {
		return err
	}
	s.mu.Lock()
	name, ok := tx.savepoints[id]
	s.mu.Unlock()
	if !ok {
		s.releaseTx(tx, nil)
		return errUnknownSavepoint
	}
	return s.runSavepoint(ctx, tx, verb, name)
}

var errUnknownSavepoint = status.Errorf(codes.InvalidArgument, "[%s] unknown savepoint (not taken by BeginSavepoint in a transaction of yours that is still open)",
	sqlstate.InvalidSavepointSpecification)

// runSavepoint runs verb and the quoted name on tx's session, and ends the statement. The name
// is quoted as SQL quotes it, then, on a syntax error (MySQL, which fails no transaction for
// one), as MySQL does: the frontend does not know the engine's quotes.
func (s *Server) runSavepoint(ctx context.Context, tx *transaction, verb, name string) error {
	err := runToEnd(ctx, tx.session, s.request(ctx, verb+quoteIdent(name, `"`), nil))
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "syntax") {
		err = runToEnd(ctx, tx.session, s.request(ctx, verb+quoteIdent(name, "`"), nil))
	}
	s.releaseTx(tx, err)
	return toStatus(contextOr(ctx, err))
}

// savepointsSupported reports whether the caller's transactions can roll back to savepoints:
// they can be begun, and route to an engine that keeps savepoints (not DuckDB).
func (s *Server) savepointsSupported(ctx context.Context) bool {
	if _, ok := s.backend.(engine.SessionOpener); !ok {
		return false
	}
	r, ok := s.backend.(interface {
		RoutesTo(q *query.Request, is func(query.Engine) bool) bool
	})
	if !ok {
		_, refuses := s.backend.(savepointRefuser)
		return !refuses
	}
	return r.RoutesTo(s.request(ctx, "BEGIN", nil), func(e query.Engine) bool {
		_, refuses := e.(savepointRefuser)
		return !refuses
	})
}

// sqlInfo is the SqlInfo this server answers; savepoints as savepointsSupported says.
func sqlInfo(backend query.Backend, savepoints bool) map[fsql.SqlInfo]any {
	tx := transactionInfo(backend)
	if savepoints && tx == int32(fsql.SqlTransactionTransaction) {
		tx = int32(fsql.SqlTransactionSavepoint)
	}
	return map[fsql.SqlInfo]any{
		fsql.SqlInfoFlightSqlServerName:        "QueryFlux",
		fsql.SqlInfoFlightSqlServerVersion:     "1",
		fsql.SqlInfoFlightSqlServerReadOnly:    false,
		fsql.SqlInfoFlightSqlServerSql:         true,
		fsql.SqlInfoFlightSqlServerTransaction: tx,
		fsql.SqlInfoTransactionsSupported:      tx != int32(fsql.SqlTransactionNone),
		fsql.SqlInfoSavePointsSupported:        tx == int32(fsql.SqlTransactionSavepoint),
	}
}

// DoGetSqlInfo answers SqlInfo for the caller: whether its transactions keep savepoints
// depends on the engine they route to.
func (s *Server) DoGetSqlInfo(ctx context.Context, cmd fsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	answer := fsql.BaseServer{Alloc: s.Alloc}
	for id, v := range sqlInfo(s.backend, s.savepointsSupported(ctx)) { //determinism:ok the answer is by id, not by this order
		if err := answer.RegisterSqlInfo(id, v); err != nil {
			return nil, nil, status.Error(codes.Internal, fmt.Sprintf("sql info: %v", err))
		}
	}
	return answer.DoGetSqlInfo(ctx, cmd)
}

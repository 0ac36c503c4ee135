package mysqlwire

import (
	"context"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Statement-level rollback on PostgreSQL. MariaDB undoes a failed statement of a transaction
// (a duplicate key, a bad cast, a missing table) and keeps the transaction: the next
// statements run and COMMIT commits the ones that succeeded. PostgreSQL aborts the whole
// transaction on any error: every later statement failed with 25P02 (1105 to the client) and
// the client's COMMIT ended a transaction PostgreSQL had rolled back.
//
// So on a pinned PostgreSQL connection (an engine.PGWireOpener: the engine is a PostgreSQL
// server) inside an open transaction, each statement the engine runs is preceded by a
// savepoint of the proxy's own, and a statement that leaves the transaction aborted is undone
// by ROLLBACK TO that savepoint, which leaves the transaction as MariaDB leaves it. A deadlock
// or serialization failure (1213) rolls the whole transaction back, as MariaDB (InnoDB) does
// for a deadlock.
//
// Cost, counted in round trips to the engine: one (the SAVEPOINT) per statement in an open
// transaction, one more for a statement that fails, and one RELEASE per stmtSavepointChain
// statements: a savepoint that succeeded is not released (that would be a second round trip a
// statement) but kept, nested, and the chain is released at once from its first savepoint
// (RELEASE releases every savepoint after the one it names) when it is stmtSavepointChain
// long, so PostgreSQL keeps at most that many subtransactions open. Statements outside a
// transaction (autocommit) and statements on other engines are sent as before.
//
// The client's own savepoints stay the client's: before its SAVEPOINT the proxy's chain is
// released, so the chain always comes after every savepoint of the client's, and the
// client's RELEASE or ROLLBACK TO (which undo every savepoint after theirs) end the chain.
const (
	stmtSavepointFirst = "queryflux_stmt_chain" // the chain's first savepoint: RELEASE of it releases the chain
	stmtSavepointNext  = "queryflux_stmt"       // each later one (ROLLBACK TO names the newest of that name)
	stmtSavepointChain = 32
)

// stmtGuard is the savepoint a statement runs after ("" for none).
type stmtGuard string

// abortsOnError reports whether e is an engine whose transactions an error aborts and that
// can roll back to a savepoint: a PostgreSQL server.
func abortsOnError(e query.Engine) bool {
	_, ok := e.(engine.PGWireOpener)
	return ok
}

// rollsBackStatements reports whether the transaction req opens runs on an engine that
// abortsOnError: the session then guards its statements (set when the session pins).
func (h *session) rollsBackStatements(req *query.Request) bool {
	return h.routesToPostgreSQL(req)
}

// routesToPostgreSQL reports whether req's statement runs on a PostgreSQL server.
func (h *session) routesToPostgreSQL(req *query.Request) bool {
	if r, ok := h.s.backend.(engineRouter); ok {
		return r.RoutesTo(req, abortsOnError)
	}
	_, ok := h.s.backend.(engine.PGWireOpener)
	return ok
}

// guardStatement takes the savepoint the statement sql runs after, when the session's pinned
// connection is in an open transaction on an engine that aborts on error. A statement that
// ends or starts a transaction, or the client's own SAVEPOINT, runs unguarded.
func (h *session) guardStatement(ctx context.Context, sql string) stmtGuard {
	if !h.stmtRollback || h.pinned == nil {
		return ""
	}
	if h.pinned.TxStatus() != 'T' || isTxEnd(sql) {
		h.stmtSavepoints = 0 // the transaction ended (or ends now): so did its savepoints
		return ""
	}
	if beginsTransaction(sql) {
		return ""
	}
	if sqltok.FirstKeywordIs(sql, sqltok.MySQL, "savepoint") {
		h.releaseStmtSavepoints(ctx)
		return ""
	}
	if h.stmtSavepoints >= stmtSavepointChain {
		h.releaseStmtSavepoints(ctx)
	}
	name := stmtSavepointNext
	if h.stmtSavepoints == 0 {
		name = stmtSavepointFirst
	}
	if err := h.execPinned(ctx, "SAVEPOINT "+name); err != nil {
		return "" // the statement runs unguarded, as before
	}
	h.stmtSavepoints++
	return stmtGuard(name)
}

// releaseStmtSavepoints releases the proxy's savepoint chain, if any.
func (h *session) releaseStmtSavepoints(ctx context.Context) {
	if h.stmtSavepoints == 0 {
		return
	}
	h.stmtSavepoints = 0
	_ = h.execPinned(ctx, "RELEASE SAVEPOINT "+stmtSavepointFirst)
}

// settleStatement follows a guarded statement once its rows are closed: one that left the
// transaction aborted is rolled back to its savepoint (or, for a deadlock or serialization
// failure, the whole transaction is rolled back, as MariaDB does); the client's RELEASE or
// ROLLBACK TO that succeeded ended the chain. errno is the error the client was answered, if
// any.
func (h *session) settleStatement(g stmtGuard, sql string, errno uint16) {
	if g == "" || h.pinned == nil {
		return
	}
	switch h.pinned.TxStatus() {
	case 'T':
		if sqltok.FirstKeywordIs(sql, sqltok.MySQL, "release") || rollsBackToSavepoint(sql) {
			h.stmtSavepoints = 0
		}
		return
	case 'E':
	default:
		h.stmtSavepoints = 0
		return
	}
	if errno == mysql.ER_LOCK_DEADLOCK {
		h.stmtSavepoints = 0
		_ = h.execPinned(h.ctx, "ROLLBACK")
		return
	}
	_ = h.execPinned(h.ctx, "ROLLBACK TO SAVEPOINT "+string(g))
}

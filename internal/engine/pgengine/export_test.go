package pgengine

import (
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// SetRelayWaiting has f called each time a relay connect starts waiting for a connection to
// come back, so a test can act once the wait has begun.
func SetRelayWaiting(e *Engine, f func()) { e.raw.waiting = f }

// SetCancelSent has f called after each cancel request the relay connections send (a wire's
// Cancel, a connection given back mid-statement); set it before the connections are opened.
func SetCancelSent(e *Engine, f func()) { e.raw.cancelSent = f }

// CancelHandler is the handler a pooled connection's context watcher uses for pc, with sent
// called after each cancel request it sends.
func CancelHandler(pc *pgconn.PgConn, sent func()) ctxwatch.Handler {
	return &resendingCancel{conn: pc, sent: sent}
}

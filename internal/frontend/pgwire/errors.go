package pgwire

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// sendError reports err to the client as an ERROR (the session goes on). A PostgreSQL
// server's own error passes through with all its fields; a *query.Error keeps its SQLSTATE;
// anything else is 58000 (system_error).
func (c *conn) sendError(err error) {
	c.be.Send(errorResponse(err))
}

func errorResponse(err error) *pgproto3.ErrorResponse {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The engine's session may have died, ours has not: never forward FATAL or PANIC.
		return &pgproto3.ErrorResponse{
			Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: pe.Code,
			Message: pe.Message, Detail: pe.Detail, Hint: pe.Hint, Position: pe.Position,
			InternalPosition: pe.InternalPosition, InternalQuery: pe.InternalQuery, Where: pe.Where,
			SchemaName: pe.SchemaName, TableName: pe.TableName, ColumnName: pe.ColumnName,
			DataTypeName: pe.DataTypeName, ConstraintName: pe.ConstraintName, Routine: pe.Routine,
		}
	}
	resp := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR"}
	var qe *query.Error
	switch {
	case errors.As(err, &qe):
		resp.Code, resp.Message = qe.Code, qe.Message
	case errors.Is(err, context.DeadlineExceeded):
		resp.Code, resp.Message = sqlstate.QueryCanceled, "canceling statement due to statement timeout"
	case errors.Is(err, context.Canceled):
		resp.Code, resp.Message = sqlstate.QueryCanceled, "canceling statement"
	default:
		resp.Code, resp.Message = query.CodeEngine, err.Error()
	}
	return resp
}

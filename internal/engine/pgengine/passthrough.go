package pgengine

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"
)

// ExecRaw runs one statement on a pooled connection through the extended protocol (Parse,
// Bind, Describe, Execute, Sync: one round trip) and returns the engine's raw result: the
// PostgreSQL frontend relays its RowDescription, DataRow values and command tag without
// decoding them (passthrough). params, paramOIDs and the format codes are the client's own
// Bind, so the engine sees exactly what the client sent; len(paramOIDs) and
// len(paramFormats) must be 0, 1 or len(params).
//
// The caller must read or Close the ResultReader and then call release, which returns the
// connection to the pool. Cancelling ctx cancels the statement on the server. A nil
// ResultReader comes with a non-nil error (no connection could be had).
func (e *Engine) ExecRaw(ctx context.Context, sql string, params [][]byte, paramOIDs []uint32, paramFormats, resultFormats []int16) (*pgconn.ResultReader, func(), error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, wrapErr(err)
	}
	rr := conn.Conn().PgConn().ExecParams(ctx, sql, params, paramOIDs, paramFormats, resultFormats)
	return rr, conn.Release, nil
}

// ExecRaw runs one statement on the session's pinned connection, as Engine.ExecRaw does on a
// pooled one (passthrough inside a transaction). release does nothing: the connection stays
// pinned until Close.
func (s *session) ExecRaw(ctx context.Context, sql string, params [][]byte, paramOIDs []uint32, paramFormats, resultFormats []int16) (*pgconn.ResultReader, func(), error) {
	rr := s.conn.Conn().PgConn().ExecParams(ctx, sql, params, paramOIDs, paramFormats, resultFormats)
	return rr, func() {}, nil
}

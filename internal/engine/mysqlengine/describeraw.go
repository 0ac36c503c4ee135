package mysqlengine

import (
	"context"
	"fmt"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/queryflux/queryflux/internal/query"
)

// DescribeRaw prepares q.SQL on a pooled connection (in q's database, of q's flags) and returns
// the column definitions the server's COM_STMT_PREPARE answer carried, as it wrote them (the
// MySQL wire frontend's COM_STMT_PREPARE hands them to its client, as MariaDB's own answer):
// none for a statement without a result. The statement stays prepared on the connection
// (stmtCache), for an execution of it there. A statement the server refuses is its error,
// wrapped as Execute's.
func (e *Engine) DescribeRaw(ctx context.Context, q *query.Request) ([][]byte, error) {
	c, err := e.acquireFor(ctx, q)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { cut(c) }) // a prepare runs nothing: a hung server only
	st, err := e.prepared(c, tagged(ctx, q.SQL))
	stop()
	if err != nil {
		e.release(c, ctx.Err() == nil && isServerErr(err))
		return nil, e.wrap(contextOr(ctx, err))
	}
	cols := rawColumns(st, q.ExtendedMetadata && !hasMetadata(c))
	e.release(c, true)
	return cols, nil
}

// DescribeRaw is Engine.DescribeRaw on the pinned connection (a statement of the transaction may
// name what the transaction made: a temporary table); it is not kept prepared there.
func (s *session) DescribeRaw(ctx context.Context, q *query.Request) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil || s.running || s.broken {
		return nil, fmt.Errorf("mysqlengine: the session cannot describe now")
	}
	stop := context.AfterFunc(ctx, func() { cut(s.conn) })
	defer stop()
	st, err := s.conn.Prepare(q.SQL)
	if err != nil {
		s.broken = !isServerErr(err)
		return nil, s.e.wrap(contextOr(ctx, err))
	}
	cols := rawColumns(st, q.ExtendedMetadata && !hasMetadata(s.conn))
	if err := st.Close(); err != nil {
		s.broken = true
	}
	return cols, nil
}

// rawColumns copies st's column definitions, with empty extended metadata added when the
// client asked for it and the server gave none (as FieldList adds it).
func rawColumns(st *client.Stmt, emptyMetadata bool) [][]byte {
	cols := make([][]byte, len(st.RawColumnFields))
	for i, p := range st.RawColumnFields {
		if emptyMetadata {
			cols[i] = AppendMetadata(nil, p, "")
		} else {
			cols[i] = append([]byte(nil), p...)
		}
	}
	return cols
}

// isServerErr: err is the server's answer (the connection is as it was).
func isServerErr(err error) bool {
	_, ok := serverError(err)
	return ok
}

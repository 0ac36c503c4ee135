package mysqlengine

import (
	"context"
	"fmt"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Prepared statements relayed: a client's COM_STMT_EXECUTE runs as a COM_STMT_EXECUTE on a
// pooled connection, its parameters as the client encoded them and its binary rows relayed as
// the engine sent them (RawQuery). Each connection prepares a statement once and keeps its id
// (stmtCache), as a client's own connection would; a closed connection takes its statements
// with it.

// StmtParams are a COM_STMT_EXECUTE's parameters in the binary protocol: Types has two bytes
// per parameter (type, flags), Values the non-NULL values one after another, NullBitmap one
// bit per parameter. Long data (COM_STMT_SEND_LONG_DATA) must already be in Values.
type StmtParams struct {
	Count      int
	NullBitmap []byte
	Types      []byte
	Values     []byte
}

// stmtsPerConnMax bounds the statements one connection keeps prepared: past it they are all
// closed and prepared again as they come (MySQL's max_prepared_stmt_count is per server).
const stmtsPerConnMax = 128

// stmtCache is one connection's prepared statements, by SQL text as prepared: with its lease's
// tag, so a statement runs prepared anew under each lease that a connection serves.
type stmtCache map[string]*client.Stmt

// ExecuteRaw runs q.SQL as a prepared statement with p on a pooled connection (in q's
// database) and reads the response head as QueryRaw does; the rows that follow are in the
// binary protocol. Cancelling ctx kills the statement on the server.
func (e *Engine) ExecuteRaw(ctx context.Context, q *query.Request, p StmtParams) (*RawQuery, error) {
	c, err := e.acquireFor(ctx, q)
	if err != nil {
		return nil, err
	}
	st, err := e.prepared(c, tagged(ctx, q.SQL))
	if err == nil && st.ParamNum() != p.Count {
		err = &query.Error{Code: sqlstate.MySQLGeneralError, Message: fmt.Sprintf("the statement takes %d parameters, the client sent %d (MySQL error %d)", st.ParamNum(), p.Count, mysql.ER_WRONG_ARGUMENTS)}
	}
	if err != nil {
		e.release(c, true)
		return nil, e.wrap(err)
	}
	r := &RawQuery{e: e, conn: c, sql: q.SQL, ctx: ctx, buf: getRelayBuffers(), healthy: !changesSession(q.SQL),
		emptyMetadata: q.ExtendedMetadata && !hasMetadata(c)}
	r.stopKill = context.AfterFunc(ctx, r.kill)
	if err := r.start(executePacket(r.buf.out[:0], st.ID, p, e.negotiated(c)&capsQueryAttributes != 0)); err != nil {
		r.fail(err)
	}
	if r.err != nil || r.engineErr != nil {
		return nil, r.Close()
	}
	return r, nil
}

// prepared returns c's statement for sql, preparing it on first use.
func (e *Engine) prepared(c *client.Conn, sql string) (*client.Stmt, error) {
	e.mu.Lock()
	cache := e.stmts[c]
	st := cache[sql]
	e.mu.Unlock()
	if st != nil {
		return st, nil
	}
	if len(cache) >= stmtsPerConnMax {
		for _, old := range cache {
			_ = old.Close()
		}
		cache = nil
	}
	st, err := c.Prepare(sql)
	if err != nil {
		return nil, err
	}
	if cache == nil {
		cache = stmtCache{}
	}
	cache[sql] = st
	e.mu.Lock()
	e.stmts[c] = cache
	e.mu.Unlock()
	return st, nil
}

// forget drops c's statements (c is being closed).
func (e *Engine) forget(c *client.Conn) {
	e.mu.Lock()
	delete(e.stmts, c)
	e.mu.Unlock()
}

// executePacket frames a COM_STMT_EXECUTE (payload after the 4-byte header) for statement id:
// no cursor, one iteration, the types bound anew. With query attributes (MySQL 8.0.23+) the
// parameter count comes first and every type is followed by its (empty) name.
func executePacket(b []byte, id uint32, p StmtParams, attributes bool) []byte {
	b = append(b, 0, 0, 0, 0, mysql.COM_STMT_EXECUTE, byte(id), byte(id>>8), byte(id>>16), byte(id>>24), 0, 1, 0, 0, 0)
	if p.Count == 0 {
		return b
	}
	if attributes {
		b = append(b, mysql.PutLengthEncodedInt(uint64(p.Count))...)
	}
	b = append(b, p.NullBitmap...)
	b = append(b, 1)
	if !attributes {
		b = append(b, p.Types...)
	} else {
		for i := 0; i+1 < len(p.Types); i += 2 {
			b = append(b, p.Types[i], p.Types[i+1], 0)
		}
	}
	return append(b, p.Values...)
}

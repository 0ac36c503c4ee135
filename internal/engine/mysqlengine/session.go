package mysqlengine

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

var _ engine.SessionOpener = (*Engine)(nil)

// OpenSession pins one connection for a client's transaction: every statement of the session
// runs on it, one at a time, until Close.
func (e *Engine) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	c, err := e.acquireFor(ctx, q)
	if err != nil {
		return nil, err
	}
	return &session{e: e, conn: c, inTx: c.IsInTransaction()}, nil
}

// session is one pinned connection.
type session struct {
	e *Engine

	mu      sync.Mutex
	conn    *client.Conn // nil once closed
	running bool         // a statement's rows are open
	broken  bool         // a statement ended with the connection in an unknown state
	dirty   bool         // a statement left session state (SET, LOCK, ...)
	// inTx is the connection's transaction state as its last statement left it. The
	// connection's own status is written by the goroutine running a statement (produce), so it
	// is read there, when the statement ends, and TxStatus reads this copy.
	inTx bool
}

// Execute runs q on the pinned connection. A session runs one statement at a time: the
// previous statement's rows must be closed first.
func (s *session) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	s.mu.Lock()
	switch {
	case s.conn == nil:
		s.mu.Unlock()
		return nil, fmt.Errorf("mysqlengine: session closed")
	case s.broken:
		s.mu.Unlock()
		return nil, &query.Error{Code: sqlstate.InFailedSQLTransaction, Message: "the transaction's connection failed; roll back and start again"}
	case s.running:
		s.mu.Unlock()
		return nil, fmt.Errorf("mysqlengine: session is still running a statement")
	}
	c := s.conn
	if db := requestDatabase(q); q.Protocol == query.ProtocolTrino && db != "" && db != c.GetDB() {
		// a Trino client's USE inside its transaction: its next statements resolve names there
		if err := c.UseDB(db); err != nil {
			s.mu.Unlock()
			return nil, s.e.wrap(err)
		}
	}
	q = trinoDialect(ctx, c, q)
	s.running = true
	s.dirty = s.dirty || changesSession(q.SQL)
	s.mu.Unlock()
	r := newRows(s.e, c, q, s.finished)
	go r.produce(ctx)
	if err := r.waitStart(ctx); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// finished is called by the goroutine that ran the statement, with the connection still its.
func (s *session) finished(healthy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	s.broken = s.broken || !healthy
	if s.conn != nil {
		s.inTx = s.conn.IsInTransaction()
	}
}

// TxStatus reports 'T' inside a transaction, 'E' once a statement left the connection in an
// unknown state (cancelled, cut, its answer abandoned: whatever transaction it held is lost),
// 'I' otherwise. MySQL has no failed-transaction state of its own: a statement the server
// refused leaves the transaction open ('T'), and the next statements run in it.
func (s *session) TxStatus() byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conn == nil:
		return 'I'
	case s.broken:
		return 'E'
	case s.inTx:
		return 'T'
	}
	return 'I'
}

// Close gives the connection back: to the pool when it is clean, else closed (which rolls
// back an open transaction).
func (s *session) Close() error {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	clean := !s.broken && !s.dirty && !s.running
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	s.e.release(c, clean) // release closes a connection still inside a transaction
	return nil
}

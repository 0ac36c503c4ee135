package pgengine

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// budget bounds the connections an engine holds open to PostgreSQL: the pgx pool's (the Arrow
// path, pinned transactions, Describe) and the relay's (forwarded clients) together, so that
// a cluster's MaxConns is what PostgreSQL sees. A connection takes a token once its socket is
// connected (pgconn's AfterNetConnect, which cancel requests never pass) and gives it back
// when the socket closes. When no token is free an idle connection of either pool is closed
// to free one; when none is idle either, the connect waits for a token, up to its context.
type budget struct {
	tokens chan struct{}
	// reclaim closes one idle connection; false when there is none.
	reclaim func() bool
	// waiting, when set, counts the takes that wait for a token: a connection kept between
	// its owner's transactions goes back at its transaction's end meanwhile (hold.go).
	waiting *atomic.Int32
}

// budgetRetry is how often a connect waiting for a token looks for an idle connection again
// (one may have come back to either pool meanwhile).
const budgetRetry = 20 * time.Millisecond

// retryTimer is one timer for every retry of a wait loop (budgetRetry), made at its first.
type retryTimer struct{ t *time.Timer }

// start (re)arms the timer and returns its channel.
func (r *retryTimer) start() <-chan time.Time {
	if r.t == nil {
		r.t = time.NewTimer(budgetRetry)
	} else {
		r.t.Reset(budgetRetry)
	}
	return r.t.C
}

func (r *retryTimer) stop() {
	if r.t != nil {
		r.t.Stop()
	}
}

func newBudget(size int) *budget {
	return &budget{tokens: make(chan struct{}, size), reclaim: func() bool { return false }}
}

// spent says every token is taken.
func (b *budget) spent() bool { return len(b.tokens) == cap(b.tokens) }

// take waits for a token.
func (b *budget) take(ctx context.Context) error {
	var retry retryTimer
	defer retry.stop()
	counted := false
	for {
		select {
		case b.tokens <- struct{}{}:
			return nil
		default:
		}
		if b.reclaim() {
			continue
		}
		if !counted && b.waiting != nil {
			// Counted, then reclaimed again: the holders asked after the count cannot miss
			// it (hold.go).
			counted = true
			b.waiting.Add(1)
			defer b.waiting.Add(-1)
			continue
		}
		select {
		case b.tokens <- struct{}{}:
			return nil
		case <-retry.start():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// afterNetConnect is pgconn's AfterNetConnect: the connection holds a token while it is open.
func (b *budget) afterNetConnect(ctx context.Context, _ *pgconn.Config, nc net.Conn) (net.Conn, error) {
	if err := b.take(ctx); err != nil {
		return nc, err // pgconn closes nc
	}
	return &budgetConn{Conn: nc, b: b}, nil
}

// budgetConn is a connection holding a token of its engine's budget until it is closed.
type budgetConn struct {
	net.Conn
	b    *budget
	once sync.Once
}

func (c *budgetConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.b.tokens })
	return err
}

// NetConn is the connection under the budget's wrapper.
func (c *budgetConn) NetConn() net.Conn { return c.Conn }

// withoutBudget is nc without the budget's wrapper.
func withoutBudget(nc net.Conn) net.Conn {
	if bc, ok := nc.(*budgetConn); ok {
		return bc.Conn
	}
	return nc
}

// closeIdlePgx closes one idle connection of pool; false when none is idle.
func closeIdlePgx(pool *pgxpool.Pool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	idle := pool.AcquireAllIdle(ctx)
	if len(idle) == 0 {
		return false
	}
	for _, c := range idle[1:] {
		c.Release()
	}
	_ = idle[0].Hijack().Close(ctx)
	return true
}

package pgengine

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Ping answers whether PostgreSQL takes a connection and a statement. The cluster's health
// check calls it; a pooled ping on a cluster whose every connection runs a statement waited for
// one to end, so a cluster at its cap with statements longer than the check's timeout was
// marked unhealthy and its group's clients refused ("no enabled, healthy cluster") instead of
// queued. Then the ping dials a connection of its own, outside the budget (one more than
// MaxConns for as long as a ping takes, as the MySQL engine does), and closes it.
func (e *Engine) Ping(ctx context.Context) error {
	if e.busy == nil || !e.busy() {
		return wrapErr(e.pool.Ping(ctx))
	}
	cfg := e.pool.Config().ConnConfig.Copy()
	cfg.AfterNetConnect = nil // no budget token: the budget is spent
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return wrapErr(err)
	}
	defer c.Close(context.Background())
	return wrapErr(c.Ping(ctx))
}

package pgengine

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The server's TimeZone, as its connections report it when they start (ParameterStatus): the
// server's, the engine user's or database's (ALTER ROLE/DATABASE ... SET timezone), or the
// cluster's options'. A relayed statement's timestamptz values are written in it (a relay
// connection is reset to it for each new client), so the pgwire frontend reports it to a
// client at login, as PostgreSQL does (ServerTimeZone, proxy.Core.LoginTimeZone).

// serverZone is the TimeZone the engine's last connection reported.
type serverZone struct{ v atomic.Pointer[string] }

func (z *serverZone) note(pc *pgconn.PgConn) {
	if tz := pc.ParameterStatus("TimeZone"); tz != "" {
		z.v.Store(&tz)
	}
}

// noteOnConnect makes the pool's new connections note their TimeZone in z.
func (z *serverZone) noteOnConnect(cfg *pgxpool.Config) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		z.note(conn.PgConn())
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
}

// ServerTimeZone is the TimeZone the server reported to the engine's last new connection; ""
// before the first.
func (e *Engine) ServerTimeZone() string {
	if tz := e.zone.v.Load(); tz != nil {
		return *tz
	}
	return ""
}

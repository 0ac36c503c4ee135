package pgengine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/query"
)

// A pooled connection goes from one client user to another only through a reset, as the relay's
// connections do (wire.go): a statement leaves session state behind it (a temporary table,
// which then shadows a table of the same name for whoever runs next on the connection; a
// session setting; a prepared statement; an advisory lock; a held cursor), and the next
// statement on that connection may be another user's. The pool remembers whose statements a
// connection last ran (pgconn's CustomData) and, when it is taken for another user's, runs
// DISCARD ALL first (and forgets pgx's prepared statements, which that drops). Statements of
// the proxy's own (catalog reads, health checks) carry no user: they neither reset a
// connection nor claim it.

// ownerKey is where a connection remembers the user whose statements it last ran.
const ownerKey = "queryflux.owner"

type ownerCtxKey struct{}

// forStatement is ctx carrying what the pool readies a connection with for q: its search_path
// (searchpath.go) and its user.
func forStatement(ctx context.Context, q *query.Request) context.Context {
	return query.WithValue(withSearchPath(ctx, q), ownerCtxKey{}, q.User)
}

// resetForOwner discards conn's session state when ctx's statement is another user's than the
// connection's last. after runs once the state is gone (what AfterConnect set, again).
func resetForOwner(ctx context.Context, conn *pgx.Conn, after func(context.Context, *pgx.Conn) error) error {
	owner, ok := ctx.Value(ownerCtxKey{}).(string)
	if !ok {
		return nil
	}
	data := conn.PgConn().CustomData()
	last, had := data[ownerKey].(string)
	if had && last == owner {
		return nil // the same user's again, as most statements are: nothing to store either
	}
	data[ownerKey] = owner
	if !had {
		return nil
	}
	if err := conn.DeallocateAll(ctx); err != nil {
		return fmt.Errorf("pgengine: resetting the session for another user: %w", err)
	}
	// Apart: DISCARD ALL cannot run in the implicit transaction of a multi-statement query.
	if _, err := conn.PgConn().Exec(ctx, "DISCARD ALL").ReadAll(); err != nil {
		return fmt.Errorf("pgengine: resetting the session for another user: %w", err)
	}
	if after != nil {
		if err := after(ctx, conn); err != nil {
			return err
		}
	}
	delete(data, tagKey) // RESET ALL put application_name and search_path back
	delete(data, searchPathKey)
	return nil
}

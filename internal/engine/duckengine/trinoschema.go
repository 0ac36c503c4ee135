package duckengine

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/query"
)

// A Trino client's schema (X-Trino-Schema, or the one USE named) is where its unqualified
// names resolve, as Trino resolves them: its statement (or transaction) runs on a connection
// whose search_path is that schema, then the compatibility catalog's (catalog.go), and the
// connection's own path is set back as it is released, for its next user. A schema that does
// not exist leaves the path as it was: a table named only in it is then not found.

// trinoPaths are the connections whose search_path a Trino client's schema set, each with the
// statement that sets its own back (release); trinoPathsSet counts them, so that a release of
// any other connection looks no further.
var (
	trinoPaths    sync.Map // *sql.Conn -> string
	trinoPathsSet atomic.Int64
)

// connFor is a pooled connection for q: with its search_path set to a Trino client's schema.
func (e *Engine) connFor(ctx context.Context, q *query.Request) (*sql.Conn, error) {
	conn, err := e.conn(ctx)
	if err != nil || q.Protocol != query.ProtocolTrino || q.Schema == "" {
		return conn, err
	}
	var own string
	if conn.QueryRowContext(ctx, "SELECT current_setting('search_path')").Scan(&own) != nil {
		return conn, nil
	}
	path := quoteIdent(q.Schema) + "," + quoteIdent(compatCatalog) + ".main"
	if _, err := conn.ExecContext(ctx, "SET search_path = "+quoteString(path)); err != nil {
		return conn, nil
	}
	trinoPaths.Store(conn, "SET search_path = "+quoteString(own))
	trinoPathsSet.Add(1)
	return conn, nil
}

// restorePath sets conn's own search_path back if a Trino client's schema changed it; false
// when that failed (the connection is not to be kept).
func restorePath(conn *sql.Conn) bool {
	if trinoPathsSet.Load() == 0 {
		return true
	}
	undo, ok := trinoPaths.LoadAndDelete(conn)
	if !ok {
		return true
	}
	trinoPathsSet.Add(-1)
	_, err := conn.ExecContext(context.Background(), undo.(string))
	return err == nil
}

// followSchema sets conn's search_path to schema, where a Trino client's USE inside its
// transaction moved it (the connection was given its path as the transaction began), keeping
// the connection's own path to set back at its release, as connFor does.
func followSchema(ctx context.Context, conn *sql.Conn, schema string) error {
	if _, ok := trinoPaths.Load(conn); !ok {
		var own string
		if err := conn.QueryRowContext(ctx, "SELECT current_setting('search_path')").Scan(&own); err != nil {
			return err
		}
		trinoPaths.Store(conn, "SET search_path = "+quoteString(own))
		trinoPathsSet.Add(1)
	}
	path := quoteIdent(schema) + "," + quoteIdent(compatCatalog) + ".main"
	_, err := conn.ExecContext(ctx, "SET search_path = "+quoteString(path))
	return err
}

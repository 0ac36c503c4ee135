package pgengine

import (
	"context"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
)

// A Trino client's schema (X-Trino-Schema, or the one USE named) is where its unqualified
// names resolve, as Trino resolves them: its statement runs on a connection whose search_path
// is that schema alone. The pool sets it as it takes the connection for the statement, in the
// round trip that tags the session (retag), and only when the connection's differs; a
// statement without one puts the server's default back (pg_settings' reset_val), so a path
// never outlives the statements it was set for.

// searchPathKey is where a connection remembers the search_path set on it (pgconn's
// CustomData); absent or "" for the server's default.
const searchPathKey = "queryflux.search_path"

type searchPathCtxKey struct{}

// withSearchPath is ctx carrying the search_path q's statement needs: its schema's for a Trino
// client that has one; ctx itself otherwise.
func withSearchPath(ctx context.Context, q *query.Request) context.Context {
	if q.Protocol != query.ProtocolTrino || q.Schema == "" {
		return ctx
	}
	return query.WithValue(ctx, searchPathCtxKey{}, `"`+strings.ReplaceAll(q.Schema, `"`, `""`)+`"`)
}

// searchPathOf is the search_path ctx's statement needs, "" for the server's default.
func searchPathOf(ctx context.Context) string {
	path, _ := ctx.Value(searchPathCtxKey{}).(string)
	return path
}

// setSearchPathSQL is the select item that sets the search_path to path ("": the default).
func setSearchPathSQL(path string) string {
	if path == "" {
		return "set_config('search_path', (SELECT reset_val FROM pg_catalog.pg_settings WHERE name = 'search_path'), false)"
	}
	return "set_config('search_path', '" + strings.ReplaceAll(path, "'", "''") + "', false)"
}

// cachedUnder is sqlText as it is prepared and cached (pgx's statement cache, by text) under
// ctx's search_path: a statement prepared under one path is never run under another, where
// its names may be other tables (PostgreSQL's "cached plan must not change result type").
func cachedUnder(ctx context.Context, sqlText string) string {
	path := searchPathOf(ctx)
	if path == "" {
		return sqlText
	}
	return sqlText + "\n/* search_path " + strings.ReplaceAll(path, "*/", "* /") + " */"
}

// pathUnknown is searchPathKey's value for a connection whose search_path is not known: the
// pool's next statement on it sets its own (retag).
const pathUnknown = "\x00unknown"

// followSearchPath sets the pinned connection's search_path to the one ctx's Trino statement
// needs when it differs (a USE inside the client's transaction; the connection was given its
// path when the transaction began), as retag does for a pooled statement.
func (s *session) followSearchPath(ctx context.Context, q *query.Request) error {
	if q.Protocol != query.ProtocolTrino {
		return nil // another client's session keeps the path its own SET gave it
	}
	path := searchPathOf(ctx)
	data := s.conn.Conn().PgConn().CustomData()
	if cur, _ := data[searchPathKey].(string); cur == path {
		return nil
	}
	s.pathMoved = true
	if _, err := s.conn.Conn().PgConn().Exec(ctx, "SELECT "+setSearchPathSQL(path)).ReadAll(); err != nil {
		data[searchPathKey] = pathUnknown
		return wrapErr(err)
	}
	data[searchPathKey] = path
	return nil
}

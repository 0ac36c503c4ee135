package pgengine

import (
	"context"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
)

// A Trino client's schema (X-Trino-Schema, or the one USE named) is where its unqualified
// names resolve, as Trino resolves them, and so is a MySQL client's database (its login's, or
// the one USE or COM_INIT_DB named: a MySQL client's database is a schema here, SHOW DATABASES
// lists them): its statement runs on a connection whose search_path is that schema alone. The pool sets it as it takes the connection for the statement, in the
// round trip that tags the session (retag), and only when the connection's differs; a
// statement without one puts the server's default back (pg_settings' reset_val), so a path
// never outlives the statements it was set for.

// searchPathKey is where a connection remembers the search_path set on it (pgconn's
// CustomData); absent or "" for the server's default.
const searchPathKey = "queryflux.search_path"

type searchPathCtxKey struct{}

// withSearchPath is ctx carrying the search_path q's statement needs: its schema's for a Trino
// or MySQL client that has one (clientSchema); ctx itself otherwise.
func withSearchPath(ctx context.Context, q *query.Request) context.Context {
	schema, ok := clientSchema(q)
	if !ok || schema == "" {
		return ctx
	}
	return query.WithValue(ctx, searchPathCtxKey{}, `"`+strings.ReplaceAll(schema, `"`, `""`)+`"`)
}

// clientSchema is the schema q's client has its names resolve in; ok is false for a client
// whose session sets its own path (PostgreSQL's SET search_path, Flight SQL's).
func clientSchema(q *query.Request) (schema string, ok bool) {
	switch q.Protocol {
	case query.ProtocolTrino:
		return q.Schema, true
	case query.ProtocolMySQL:
		return q.Database, true
	}
	return "", false
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

// followSearchPath sets the pinned connection's search_path to the one ctx's Trino or MySQL statement
// needs when it differs (a USE inside the client's transaction; the connection was given its
// path when the transaction began), as retag does for a pooled statement.
func (s *session) followSearchPath(ctx context.Context, q *query.Request) error {
	if _, ok := clientSchema(q); !ok {
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

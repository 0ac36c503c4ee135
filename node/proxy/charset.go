package proxy

import (
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mysqlcharset"
	"github.com/queryflux/queryflux/internal/query"
)

// inEngineCharset is req as engine e reads it: a latin1 MySQL client's statement and text
// parameters converted to UTF-8 for an engine that reads UTF-8 only (DuckDB, PostgreSQL); req
// itself for any other client, and for a MySQL engine, which takes the client's bytes in its
// collation (engine.ClientCollationTaker). The frontend converts the engine's text back
// (mysqlwire charset.go). The frontend cannot: it learns the engine only here, after routing.
func inEngineCharset(req *query.Request, e query.Engine) *query.Request {
	if !mysqlcharset.IsLatin1(req.Collation) {
		return req
	}
	if _, ok := e.(engine.ClientCollationTaker); ok {
		return req
	}
	c := *req
	c.SQL, c.ClientSQL = mysqlcharset.Latin1ToUTF8(req.SQL), mysqlcharset.Latin1ToUTF8(req.ClientSQL)
	if len(req.Args) > 0 {
		c.Args = make([]any, len(req.Args))
		for i, a := range req.Args {
			if s, ok := a.(string); ok {
				a = mysqlcharset.Latin1ToUTF8(s)
			}
			c.Args[i] = a
		}
	}
	return &c
}

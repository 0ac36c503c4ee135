package trinohttp

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// USE [catalog.]schema is answered by the proxy (useStatement: the client keeps its catalog and
// schema and sends them back), once the engine the next statement would reach says the schema
// exists, as Trino checks it: SHOW SCHEMAS FROM catalog, routed and run as that statement
// would be (with the new catalog and schema), lists it. A catalog nothing routes to, or that
// the engine does not have, is the listing's CATALOG_NOT_FOUND; a schema it does not list is
// SCHEMA_NOT_FOUND. In a transaction the listing runs in it.

// codeSchemaNotFound's error, as Trino words it.
func schemaNotFound(catalog, schema string) error {
	return &trinoFailure{codeSchemaNotFound, "Schema '" + catalog + "." + schema + "' does not exist"}
}

// use answers USE, read as header (or failed with err: useStatement), once the schema it
// names is found.
func (s *Server) use(ctx context.Context, q *runningQuery, req *query.Request, header http.Header, err error) (query.Rows, error) {
	if err != nil {
		return nil, err
	}
	catalog, schema := req.Database, header.Get("X-Trino-Set-Schema")
	if c := header.Get("X-Trino-Set-Catalog"); c != "" {
		catalog = c
	}
	list := *req
	list.SQL = "SHOW SCHEMAS FROM " + quoteTrinoName(catalog)
	list.Database, list.Schema, list.ClientSQL, list.Args = catalog, schema, "", nil
	list.Headers = maps.Clone(req.Headers)
	list.Headers["X-Trino-Catalog"], list.Headers["X-Trino-Schema"] = catalog, schema
	var rows query.Rows
	if id := req.Headers[txHeader]; id != "" && id != noTransaction {
		rows, err = s.runInTransaction(ctx, &list, id)
	} else {
		rows, err = s.backend.Execute(ctx, &list)
	}
	if err != nil {
		return nil, err
	}
	found, err := listed(ctx, rows, schema)
	if err != nil {
		return nil, err
	}
	if found == "" {
		return nil, schemaNotFound(catalog, schema)
	}
	if found != schema { // the engine's spelling, which its next statements name
		header = header.Clone()
		header.Set("X-Trino-Set-Schema", found)
	}
	for name, values := range header { //determinism:ok each header is set on its own
		q.setHeader(name, values[0])
	}
	return engine.TagRows("USE"), nil
}

// listed reads rows (a listing of names, its first column) to the end and returns the name
// that is schema: schema itself, else the one name that matches it but for case; "" for none.
func listed(ctx context.Context, rows query.Rows, schema string) (string, error) {
	defer rows.Close()
	var folded []string
	exact := false
	for {
		batch, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		if batch.NumCols() == 0 {
			continue
		}
		col := batch.Column(0)
		for i := range col.Len() {
			if col.IsNull(i) {
				continue
			}
			name := col.ValueStr(i)
			exact = exact || name == schema
			if strings.EqualFold(name, schema) {
				folded = append(folded, name)
			}
		}
	}
	switch {
	case exact:
		return schema, nil
	case len(folded) == 1:
		return folded[0], nil
	}
	return "", nil
}

// quoteTrinoName is name as a Trino delimited identifier.
func quoteTrinoName(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

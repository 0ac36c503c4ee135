// Package trinopg writes a Trino client's statement as PostgreSQL runs it: Trino's SHOW and
// DESCRIBE as queries of PostgreSQL's catalog (show.go), Trino's functions and type names as
// PostgreSQL's expressions (functions.go), its zoned timestamps as their zones' wall times
// (zones.go), an unaliased expression's column named _colN, as
// Trino names it (names.go), NULLs sorted last in a descending order as Trino sorts them (nulls.go), and information_schema.columns with Trino's columns
// (infoschema.go). It reads and writes text only: no connection, no clock, no
// state but a bounded cache of translations.
package trinopg

import (
	"github.com/queryflux/queryflux/internal/boundedcache"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// cacheMax bounds the statements whose translation is kept (the cache is dropped whole when
// full), cachedSQLMax the length of one kept: a repeated statement (SELECT 1 from a pool's
// check) is translated once.
const (
	cacheMax     = 512
	cachedSQLMax = 4096
)

var cache = boundedcache.New[string, Translation](cacheMax)

// Session is where a Trino client's unqualified names point: its catalog (a PostgreSQL
// database: the engine's own is the only one it reaches) and schema, "" for the engine's.
type Session struct {
	Catalog, Schema string
	// Database is the engine's database: the one catalog SHOW SCHEMAS may name.
	Database string
}

// SQL is sqlText, a Trino client's statement, as PostgreSQL runs it; sqlText itself when
// nothing in it is Trino's alone. A SHOW naming a catalog the engine is not fails as Trino's
// CATALOG_NOT_FOUND.
func SQL(sqlText string, s Session) (Translation, error) {
	if sqltok.FirstKeywordIs(sqlText, sqltok.Trino, "show", "describe", "desc") {
		out, ok, err := showSQL(sqlText, s)
		if err != nil || !ok {
			return Translation{SQL: sqlText, Original: sqlText}, err
		}
		return Translation{SQL: out, Original: sqlText, passes: [][]edit{{{0, len(sqlText), len(out)}}}}, nil
	}
	if t, ok := cache.Get(sqlText); ok {
		return t, nil
	}
	t := Translation{Original: sqlText}
	zoned, zones := atTimeZones(sqlText)
	called, calls := translateFunctions(zoned)
	named, names := namedItems(called)
	read, reads := infoSchemaColumns(named)
	valued, values := valuesNamed(read)
	bytes, binaries := binaryLiterals(valued)
	doubled, doubles := doubleLiterals(bytes)
	sorted, sorts := nullsLast(doubled)
	t.SQL = sorted
	for _, pass := range [][]edit{zones, calls, names, reads, values, binaries, doubles, sorts} {
		if len(pass) > 0 {
			t.passes = append(t.passes, pass)
		}
	}
	if len(sqlText) <= cachedSQLMax {
		cache.Put(sqlText, t)
	}
	return t, nil
}

// catalogNotFound is Trino's error for a catalog the engine does not reach.
func catalogNotFound(name string) error {
	return &query.Error{Code: query.CodeNoRoute, Message: "Catalog '" + name + "' does not exist"}
}

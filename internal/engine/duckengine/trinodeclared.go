package duckengine

import (
	"cmp"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// Types Trino gives that DuckDB has no type for (trinodecl): now(), current_timestamp and
// from_unixtime(x) are timestamp(3) with time zone in Trino, DuckDB's one TIMESTAMPTZ
// (microseconds) here; cast(x as varchar(7)) is varchar(7), DuckDB's VARCHAR (it drops the
// length at parse). Where a Trino client's select item is one of those (with or without an
// alias), its column carries the Trino type (engine.MetaTrinoDeclared), which the Trino
// frontend announces, its values cut to that precision. An item inside an expression keeps
// DuckDB's type; a column of a table declared varchar(n) is trinotables.go's.

// trinoDeclared is the Trino type of each select item of q's text, "" where DuckDB's type
// tells it; nil for any statement but a Trino client's SELECT naming one of those, and for a
// select list with a * (its columns are not its items).
func trinoDeclared(q *query.Request) []string {
	if q.Protocol != query.ProtocolTrino {
		return nil
	}
	return trinodecl.ItemTypes(cmp.Or(q.ClientSQL, q.SQL))
}

// declare gives each column the Trino type its select item declared, when the items are the
// columns one for one.
func declare(cols []column, declared []string) {
	if len(declared) != len(cols) {
		return
	}
	for i := range cols {
		cols[i].declared = declared[i]
	}
}

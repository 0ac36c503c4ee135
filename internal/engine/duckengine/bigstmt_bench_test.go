package duckengine_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkLargeStatement: what a 4 MiB statement costs the DuckDB path (its text a comment or
// a string literal), per client protocol; most of it is DuckDB's parse, the rest the
// engine's scans of the text.
//
//	go test -run '^$' -bench LargeStatement -benchtime 10x ./internal/engine/duckengine/
func BenchmarkLargeStatement(b *testing.B) {
	e, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	pad := strings.Repeat("x", 4<<20)
	for _, shape := range []struct{ name, head, tail string }{
		{"comment", "select 1 /* ", " */"},
		{"literal", "select length('", "')"},
	} {
		for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolFlightSQL} {
			b.Run(shape.name+"-"+protocol, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					sqlText := shape.head + strconv.Itoa(i) + pad + shape.tail
					rows, err := e.Execute(ctx, &query.Request{SQL: sqlText, Protocol: protocol})
					if err != nil {
						b.Fatal(err)
					}
					rows.Close()
				}
			})
		}
	}
}

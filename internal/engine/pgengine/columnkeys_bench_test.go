package pgengine_test

import (
	"context"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkSelectOneTable: a SELECT of one table's columns, as a MySQL client sends it (its
// columns' key words read from the catalog on another connection, columnkeys.go) and as a
// PostgreSQL client does (none read): the difference is what the column flags cost.
func BenchmarkSelectOneTable(b *testing.B) {
	qe, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: pgtest.NewDatabase(b), MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer qe.Close()
	ctx := context.Background()
	run := func(q *query.Request) {
		rows, err := qe.Execute(ctx, q)
		if err != nil {
			b.Fatalf("%s: %v", q.SQL, err)
		}
		defer rows.Close()
		for {
			if _, err := rows.Next(ctx); err == io.EOF {
				return
			} else if err != nil {
				b.Fatalf("%s: %v", q.SQL, err)
			}
		}
	}
	run(&query.Request{SQL: "CREATE TABLE t (id serial PRIMARY KEY, name text NOT NULL, n int UNIQUE)"})
	run(&query.Request{SQL: "INSERT INTO t (name, n) VALUES ('a', 10), ('b', 20), ('c', 30)"})
	for _, p := range []struct{ name, proto string }{{"mysql", query.ProtocolMySQL}, {"postgres", query.ProtocolPostgres}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				run(&query.Request{SQL: "SELECT id, name, n FROM t", Protocol: p.proto})
			}
		})
	}
}

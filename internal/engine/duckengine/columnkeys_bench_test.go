package duckengine

import (
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkSelectOneTable: a SELECT of one table's columns, as a MySQL client sends it (its
// columns' key words read from the catalog, mysqlkeys.go) and as a PostgreSQL client does
// (none read): the difference is what the column flags cost a statement.
func BenchmarkSelectOneTable(b *testing.B) {
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		b.Fatal(err)
	}
	defer qe.Close()
	for _, sql := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, n INTEGER UNIQUE)",
		"INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
	} {
		drainBench(b, qe, &query.Request{SQL: sql})
	}
	for _, p := range []struct {
		name  string
		proto string
	}{{"mysql", query.ProtocolMySQL}, {"postgres", query.ProtocolPostgres}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				drainBench(b, qe, &query.Request{SQL: "SELECT id, name, n FROM t", Protocol: p.proto})
			}
		})
	}
}

func drainBench(b *testing.B, e query.Engine, q *query.Request) {
	b.Helper()
	ctx := context.Background()
	rows, err := e.Execute(ctx, q)
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

// BenchmarkTableColumnKeys: the catalog read a SELECT of one table pays when its keys are not
// cached (the first, and the first after a statement that may change the catalog).
func BenchmarkTableColumnKeys(b *testing.B) {
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		b.Fatal(err)
	}
	defer qe.Close()
	e := qe.(*Engine)
	drainBench(b, qe, &query.Request{SQL: "CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, n INTEGER UNIQUE)"})
	drainBench(b, qe, &query.Request{SQL: "CREATE INDEX tn ON t (name)"})
	ctx := context.Background()
	conn, err := e.conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer release(conn, true)
	b.ResetTimer()
	for range b.N {
		if cols := tableColumnKeys(ctx, conn, "", "t"); len(cols) != 3 {
			b.Fatalf("columns %v", cols)
		}
	}
}

// BenchmarkInsertThenSelect: a MySQL client's INSERT and then its SELECT of the same table, the
// write-heavy mix: the SELECT's column keys stay cached across the INSERT (columnkeycache.go).
func BenchmarkInsertThenSelect(b *testing.B) {
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		b.Fatal(err)
	}
	defer qe.Close()
	drainBench(b, qe, &query.Request{SQL: "CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, n INTEGER UNIQUE)"})
	b.ReportAllocs()
	for i := range b.N {
		drainBench(b, qe, &query.Request{SQL: "INSERT INTO t VALUES (" + strconv.Itoa(i) + ", 'a', " + strconv.Itoa(i) + ")", Protocol: query.ProtocolMySQL})
		drainBench(b, qe, &query.Request{SQL: "SELECT id, name, n FROM t WHERE id = " + strconv.Itoa(i), Protocol: query.ProtocolMySQL})
	}
}

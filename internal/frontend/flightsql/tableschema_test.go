package flightsql

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestTablesWithSchemaAsQueriesSeeThem: GetTables with include_schema (what JDBC's getColumns
// and ADBC's GetObjects ask) gives each table the schema a client's SELECT * of it gets, on
// engines that describe statements (PostgreSQL, DuckDB) and on one that does not (MariaDB),
// for a name that needs quoting.
func TestTablesWithSchemaAsQueriesSeeThem(t *testing.T) {
	mariadb, _, _ := frontendtest.MariaDB(t)
	for _, c := range []struct {
		name    string
		backend func(t *testing.T) query.Backend
		create  string
		selectT string
	}{
		{"postgres", func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)})
		}, `CREATE TABLE "Odd ""T""" (id INTEGER PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2), at TIMESTAMP)`, `SELECT * FROM "Odd ""T"""`},
		{"duckdb", func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
		}, `CREATE TABLE "Odd ""T""" (id INTEGER PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2), at TIMESTAMP)`, `SELECT * FROM "Odd ""T"""`},
		{"mariadb", func(t *testing.T) query.Backend { return frontendtest.NewBackend(mariadb) },
			"CREATE TABLE `Odd \"T\"` (id INTEGER PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2), at DATETIME)", "SELECT * FROM `Odd \"T\"`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := startServer(t, c.backend(t), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, cl, "alice", "pw")
			mustUpdate(t, ctx, cl, c.create)
			info, err := cl.Execute(ctx, c.selectT)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := fetch(t, ctx, cl, info)

			name := `Odd "T"`
			info, err = cl.GetTables(ctx, &fsql.GetTablesOpts{TableNameFilterPattern: &name, IncludeSchema: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			if !r.Next() || r.RecordBatch().NumRows() != 1 {
				t.Fatalf("GetTables: %v, one table wanted", r.Err())
			}
			got, err := flight.DeserializeSchema(r.RecordBatch().Column(4).(*array.Binary).Value(0), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if got.NumFields() != 4 || !got.Equal(want) {
				t.Fatalf("table_schema\n%v\nwant (SELECT *'s)\n%v", got, want)
			}
		})
	}
}

// TestPrimaryKeysInKeyOrder: GetPrimaryKeys (JDBC's getPrimaryKeys) lists a composite key's
// columns in key order, not table order, for the named table only, on every engine kind.
func TestPrimaryKeysInKeyOrder(t *testing.T) {
	mariadb, _, _ := frontendtest.MariaDB(t)
	for name, backend := range map[string]func(t *testing.T) query.Backend{
		"postgres": func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)})
		},
		"duckdb": func(t *testing.T) query.Backend {
			return engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
		},
		"mariadb": func(t *testing.T) query.Backend { return frontendtest.NewBackend(mariadb) },
	} {
		t.Run(name, func(t *testing.T) {
			cl := startServer(t, backend(t), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, cl, "alice", "pw")
			mustUpdate(t, ctx, cl, "CREATE TABLE k2 (b INTEGER, a INTEGER, c INTEGER, PRIMARY KEY (a, b))")
			mustUpdate(t, ctx, cl, "CREATE TABLE k1 (z INTEGER PRIMARY KEY, a INTEGER)")
			info, err := cl.GetPrimaryKeys(ctx, fsql.TableRef{Table: "k2"})
			if err != nil {
				t.Fatal(err)
			}
			_, rows := fetch(t, ctx, cl, info)
			var got []string
			for _, r := range rows {
				got = append(got, r[2]+"."+r[3]+"#"+r[4])
			}
			if fmt.Sprint(got) != "[k2.a#1 k2.b#2]" {
				t.Fatalf("primary key of k2: %v (rows %v)", got, rows)
			}
		})
	}
}

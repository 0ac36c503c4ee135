package trinohttp

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// USE [catalog.]schema is answered with X-Trino-Set-Catalog and X-Trino-Set-Schema, which both
// clients send back as their catalog and schema: on MariaDB, whose database the schema names,
// the next statement runs in it. USE schema without a catalog is MISSING_CATALOG_NAME.
func TestUseSetsTheClientsCatalogAndSchema(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	ts := startServer(t, backend, Options{})

	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	conn, err := db.Conn(context.Background()) // USE lasts for the client connection it ran on
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), "USE "+dbName)
	if trinoErrorName(err) != "MISSING_CATALOG_NAME" {
		t.Fatalf("USE schema without a catalog: %v", err)
	}
	if _, err := conn.ExecContext(context.Background(), `USE Maria."`+dbName+`"`); err != nil {
		t.Fatalf("USE catalog.schema: %v", err)
	}
	var current string
	if err := conn.QueryRowContext(context.Background(), "SELECT database()").Scan(&current); err != nil || current != dbName {
		t.Fatalf("after USE: database() %q, %v; want %q", current, err, dbName)
	}
	if req := backend.LastRequest(t); req.Database != "maria" || req.Schema != dbName {
		t.Fatalf("after USE the client sent catalog %q, schema %q", req.Database, req.Schema)
	}
	if _, err := conn.ExecContext(context.Background(), "use information_schema"); err != nil {
		t.Fatalf("USE schema with the catalog set: %v", err)
	}
	if err := conn.QueryRowContext(context.Background(), "SELECT database()").Scan(&current); err != nil || current != "information_schema" {
		t.Fatalf("after USE information_schema: %q, %v", current, err)
	}

	got := runNPM(t, ts.addr, "alice",
		npmStep{Name: "nocatalog", SQL: "USE " + dbName},
		npmStep{Name: "use", SQL: "USE maria." + dbName},
		npmStep{Name: "current", SQL: "SELECT database()"})
	if e := got["nocatalog"].Error; e == nil || e.ErrorName != "MISSING_CATALOG_NAME" {
		t.Fatalf("npm USE schema without a catalog: %+v", got["nocatalog"])
	}
	if o := got["current"].OK; got["use"].Error != nil || o == nil || fmt.Sprint(o.Rows) != "[["+dbName+"]]" {
		t.Fatalf("npm USE then database(): %+v %+v", got["use"], got["current"])
	}
}

// USE checks that the schema exists where the next statement would run (SCHEMA_NOT_FOUND, and
// CATALOG_NOT_FOUND for a catalog the engine does not have), and the client's schema is where
// its unqualified names resolve: on PostgreSQL and DuckDB the statement's connection has that
// schema's search_path, and a client without one, or with another, on the same pooled
// connection resolves as before (also a statement with parameters, which pgx prepares and caches by its
// text: the same text reads a table of another row type under the other schema).
func TestUseChecksTheSchemaAndNamesResolveInIt(t *testing.T) {
	maria, _, mariaDB := frontendtest.MariaDB(t)
	pg := postgresBackend(t)
	for _, sql := range []string{"CREATE SCHEMA sales", "CREATE TABLE sales.t (v varchar)", "INSERT INTO sales.t VALUES ('seven')",
		"CREATE TABLE public.t (v integer)", "INSERT INTO public.t VALUES (1)"} {
		frontendtest.Exec(t, pg.Engine, sql)
	}
	duck := duckBackend(t)
	for _, sql := range []string{"CREATE SCHEMA sales", "CREATE TABLE sales.t (v varchar)", "INSERT INTO sales.t VALUES ('seven')",
		"CREATE TABLE main.t (v integer)", "INSERT INTO main.t VALUES (1)"} {
		frontendtest.Exec(t, duck.Engine, sql)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, catalog, schema, home string
		backend                     *frontendtest.Backend
	}{
		{"postgres", "pg", "sales", "public", pg},
		{"duckdb", "duck", "sales", "main", duck},
		{"mariadb", "maria", mariaDB, "", frontendtest.NewBackend(maria)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t, c.backend, Options{})
			db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: c.catalog})
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "USE nosuch"); trinoErrorName(err) != "SCHEMA_NOT_FOUND" {
				t.Fatalf("USE of a schema that does not exist: %v", err)
			}
			if _, err := conn.ExecContext(ctx, `USE `+c.catalog+`."`+c.schema+`"`); err != nil {
				t.Fatalf("USE %s: %v", c.schema, err)
			}
			if c.name == "duckdb" {
				if _, err := conn.ExecContext(ctx, "USE nosuch.main"); trinoErrorName(err) != "CATALOG_NOT_FOUND" {
					t.Fatalf("USE of a catalog DuckDB does not have: %v", err)
				}
			}
			if c.name == "mariadb" {
				return
			}
			other := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: c.catalog, Schema: c.home})
			none := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: c.catalog})
			for i := range 3 { // the pool hands the same connection back: each resolves as its client says
				var v string
				if err := conn.QueryRowContext(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != "seven" {
					t.Fatalf("%d: after USE sales, t's v %q, %v", i, v, err)
				}
				if err := conn.QueryRowContext(ctx, "SELECT v FROM t WHERE length(?) > 0", "x").Scan(&v); err != nil || v != "seven" {
					t.Fatalf("%d: with a parameter, after USE sales: %q, %v", i, v, err)
				}
				var n int
				if err := none.QueryRow("SELECT v FROM t").Scan(&n); err != nil || n != 1 {
					t.Fatalf("%d: a client without a schema: %d, %v", i, n, err)
				}
				if err := other.QueryRow("SELECT v FROM t WHERE length(?) > 0", "x").Scan(&n); err != nil || n != 1 {
					t.Fatalf("%d: a client of schema %s, with a parameter: %d, %v", i, c.home, n, err)
				}
			}
		})
	}
}

// USE inside a transaction switches the schema its next statements resolve names in, as out of
// one: the transaction's pinned engine connection follows the client's schema (PostgreSQL's
// search_path, DuckDB's, MariaDB's database). After the transaction, committed or rolled back,
// the pool's connection resolves each client's names in its own schema again.
func TestUseInsideATransactionSwitchesTheSchema(t *testing.T) {
	maria, _, mariaA := frontendtest.MariaDB(t)
	_, _, mariaB := frontendtest.MariaDB(t)
	pg := postgresBackend(t)
	duck := duckBackend(t)
	for _, e := range []struct {
		b *frontendtest.Backend
		a string
	}{{pg, "public"}, {duck, "main"}} {
		for _, sql := range []string{"CREATE SCHEMA sales", "CREATE TABLE sales.t (v varchar)", "INSERT INTO sales.t VALUES ('b')",
			"CREATE TABLE " + e.a + ".t (v varchar)", "INSERT INTO " + e.a + ".t VALUES ('a')"} {
			frontendtest.Exec(t, e.b.Engine, sql)
		}
	}
	for _, sql := range []string{"CREATE TABLE " + mariaA + ".t (v varchar(5))", "INSERT INTO " + mariaA + ".t VALUES ('a')",
		"CREATE TABLE " + mariaB + ".t (v varchar(5))", "INSERT INTO " + mariaB + ".t VALUES ('b')"} {
		frontendtest.Exec(t, maria, sql)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, catalog, a, b string
		backend             *frontendtest.Backend
	}{
		{"postgres", "pg", "public", "sales", pg},
		{"duckdb", "duck", "main", "sales", duck},
		{"mariadb", "maria", mariaA, mariaB, frontendtest.NewBackend(maria)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t, c.backend, Options{})
			db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: c.catalog, Schema: c.a})
			db.SetMaxOpenConns(1)
			other := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: c.catalog, Schema: c.a})
			otherB := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: c.catalog, Schema: c.b})
			read := func(q interface {
				QueryRowContext(context.Context, string, ...any) *sql.Row
			}, want, when string) {
				t.Helper()
				var v string
				if err := q.QueryRowContext(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != want {
					t.Fatalf("%s: t's v %q, %v; want %q", when, v, err, want)
				}
			}
			for i, end := range []string{"commit", "rollback", "commit"} {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				read(tx, "a", fmt.Sprintf("%d: in the transaction, before USE", i))
				if _, err := tx.ExecContext(ctx, "USE "+c.catalog+`."`+c.b+`"`); err != nil {
					t.Fatalf("%d: USE in the transaction: %v", i, err)
				}
				read(tx, "b", fmt.Sprintf("%d: in the transaction, after USE %s", i, c.b))
				if _, err := tx.ExecContext(ctx, "USE "+c.catalog+`."`+c.a+`"`); err != nil {
					t.Fatalf("%d: USE back in the transaction: %v", i, err)
				}
				read(tx, "a", fmt.Sprintf("%d: in the transaction, after USE %s", i, c.a))
				if _, err := tx.ExecContext(ctx, "USE "+c.catalog+`."`+c.b+`"`); err != nil {
					t.Fatalf("%d: USE in the transaction: %v", i, err)
				}
				if end == "commit" {
					err = tx.Commit()
				} else {
					err = tx.Rollback()
				}
				if err != nil {
					t.Fatalf("%d: %s: %v", i, end, err)
				}
				for j := range 3 { // the pool's connections, the transaction's among them
					read(otherB, "b", fmt.Sprintf("%d.%d: another client of %s after the %s", i, j, c.b, end))
					read(other, "a", fmt.Sprintf("%d.%d: another client of %s after the %s", i, j, c.a, end))
				}
			}
		})
	}
}

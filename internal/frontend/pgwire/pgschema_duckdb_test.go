package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPublicSchemaAsPostgreSQL: on the embedded DuckDB a PostgreSQL client's tables are in
// public, as on PostgreSQL: names qualified with public reach them, the current schema is
// public, and the catalog (information_schema, pg_namespace, pg_tables, pg_indexes,
// to_regclass) names their schema public, so an ORM's `table_schema = 'public'` finds them.
// Every statement's rows, and each column's name, are PostgreSQL's.
func TestPublicSchemaAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "public").URL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	setup := []string{
		`CREATE SCHEMA IF NOT EXISTS public`,
		`CREATE TABLE public.qf_items (id int PRIMARY KEY, name text NOT NULL)`,
		`CREATE INDEX qf_items_name ON "public"."qf_items" (name)`,
		`INSERT INTO public.qf_items VALUES (1, 'a'), (2, 'b')`,
		`CREATE VIEW public.qf_names AS SELECT name FROM qf_items`,
		`CREATE TABLE qf_plain (a int)`, // unqualified: in the current schema, public
		`BEGIN`, `SET LOCAL search_path TO "$user", public`, `INSERT INTO qf_plain VALUES (7)`, `COMMIT`,
	}
	for _, c := range []*pgx.Conn{pg, duck} {
		for _, s := range setup {
			if _, err := c.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if _, err := c.CopyFrom(ctx, pgx.Identifier{"public", "qf_plain"}, []string{"a"}, pgx.CopyFromRows([][]any{{int32(8)}})); err != nil {
			t.Fatalf("COPY public.qf_plain: %v", err)
		}
	}
	shape := func(c *pgx.Conn, sql string) string {
		rows, err := c.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return "error " + err.Error()
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return "error " + err.Error()
			}
			for i, f := range rows.FieldDescriptions() {
				out = append(out, fmt.Sprintf("%s=%v", f.Name, vals[i]))
			}
		}
		if rows.Err() != nil {
			return "error " + rows.Err().Error()
		}
		return strings.Join(out, " ")
	}
	for _, sql := range []string{
		`SELECT current_schema, current_schema() AS s, array_to_string(current_schemas(false), ',') AS path,
			array_to_string(current_schemas(true), ',') AS implicit`,
		`SELECT * FROM current_schema()`,
		`SELECT 1, current_schema() FROM public.qf_items LIMIT 1`, // a select item, not a FROM item
		`SELECT (SELECT 1 FROM public.qf_items LIMIT 1), current_schema() FROM public.qf_items LIMIT 1`,
		`SELECT count(*), max(s) FROM public.qf_items, current_schema() s`,
		`SELECT count(*) FROM public.qf_items`,
		`SELECT a FROM public.qf_plain ORDER BY a`,
		`SELECT array_position(pg_catalog.current_schemas(true), n.nspname) AS pos FROM pg_namespace n WHERE nspname = 'public'`,
		`SELECT count(*) FROM "public"."qf_items" i JOIN public.qf_names n ON n.name = i.name`,
		`SELECT public.qf_items.name FROM public.qf_items ORDER BY 1`,
		`SELECT table_schema, table_name, table_type FROM information_schema.tables
			WHERE table_schema = 'public' AND table_name LIKE 'qf_%' ORDER BY table_name`,
		`SELECT table_schema, column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'qf_items' ORDER BY ordinal_position`,
		`SELECT constraint_schema, table_schema, constraint_type FROM information_schema.table_constraints
			WHERE table_name = 'qf_items' AND constraint_type = 'PRIMARY KEY'`,
		`SELECT table_schema FROM information_schema.views WHERE table_name = 'qf_names'`,
		`SELECT schemaname, tablename FROM pg_tables WHERE tablename = 'qf_items'`,
		`SELECT schemaname, viewname FROM pg_views WHERE viewname = 'qf_names'`,
		`SELECT schemaname, indexname, indexdef FROM pg_indexes WHERE tablename = 'qf_items' ORDER BY indexname`,
		`SELECT n.nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid WHERE c.relname = 'qf_items'`,
		`SELECT to_regclass('public.qf_items')::text AS t, to_regclass('qf_items')::text AS u`,
		`SELECT c.relname, am.amname FROM pg_class c LEFT JOIN pg_am am ON am.oid = c.relam
			WHERE c.relname IN ('qf_items', 'qf_names') ORDER BY 1`, // a view has no access method
	} {
		if want, got := shape(pg, sql), shape(duck, sql); want != got {
			t.Errorf("%s\n  PostgreSQL:          %s\n  QueryFlux on DuckDB: %s", sql, want, got)
		}
	}
}

// TestDropSchemaPublicAsPostgreSQL: the reset test suites run, DROP SCHEMA public CASCADE then
// CREATE SCHEMA public, empties the embedded DuckDB's tables (keys among them), views,
// sequences and types, as it empties PostgreSQL's schema; without CASCADE, and CREATE SCHEMA
// public over a schema that holds anything, fail with PostgreSQL's codes.
func TestDropSchemaPublicAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "dropschema").URL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := func(err error) string {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return pgErr.Code
		}
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	steps := []string{
		`CREATE TABLE parent (id int PRIMARY KEY)`,
		`CREATE TABLE child (id int PRIMARY KEY, p int REFERENCES parent (id))`,
		`CREATE TABLE grandchild (id int, c int REFERENCES child (id))`,
		`CREATE VIEW children AS SELECT * FROM child`,
		`CREATE SEQUENCE counter`,
		`CREATE TYPE mood AS ENUM ('calm', 'cross')`,
		`CREATE SCHEMA public`,
		`DROP SCHEMA public`,
		`DROP SCHEMA public CASCADE`,
		`CREATE SCHEMA public`,
		`CREATE TABLE public.parent (id int PRIMARY KEY)`, // each name is free again
		`CREATE TABLE child (id int)`,
		`CREATE VIEW children AS SELECT 1 AS one`,
		`CREATE SEQUENCE counter`,
		`CREATE TYPE mood AS ENUM ('calm')`,
	}
	for _, s := range steps {
		_, errPG := pg.Exec(ctx, s)
		_, errDuck := duck.Exec(ctx, s)
		if want, got := code(errPG), code(errDuck); want != got {
			t.Errorf("%s: PostgreSQL %s (%v), QueryFlux on DuckDB %s (%v)", s, want, errPG, got, errDuck)
		}
	}
	const tables = `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`
	for _, c := range []*pgx.Conn{pg, duck} {
		rows, err := c.Query(ctx, tables)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || strings.Join(names, ",") != "child,children,parent" {
			t.Errorf("tables after the reset: %v (%v), want child,children,parent", names, err)
		}
	}
}

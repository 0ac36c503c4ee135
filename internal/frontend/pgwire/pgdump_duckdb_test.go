package pgwire_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPgDumpSetupOnDuckDBAsPostgreSQL: pg_dump's connection setup (and the SETs at the top of a
// dump psql restores) on the embedded DuckDB in transaction pool mode as on PostgreSQL 15:
// set_config of search_path to an empty one and the session SETs of settings that change nothing
// here answer as there; a value that would change something is still refused (0A000, or
// set_config's error), never taken and ignored.
func TestPgDumpSetupOnDuckDBAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "pgdumpsetup").URL())
	sameRows(t, pg, duck, "SELECT pg_catalog.set_config('search_path', '', false);")
	sameOutcomes(t, pg, duck,
		"SELECT pg_catalog.set_config('search_path', '', false);",
		"SET DATESTYLE = ISO", "SET INTERVALSTYLE = POSTGRES", "SET extra_float_digits TO 3",
		"SET synchronize_seqscans TO off", "SET statement_timeout = 0", "SET lock_timeout = 0",
		"SET idle_in_transaction_session_timeout = 0", "SET row_security = off",
		"BEGIN", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", "COMMIT",
		// psql restoring a dump
		"SET client_encoding = 'UTF8'", "SET standard_conforming_strings = on", "SET check_function_bodies = false",
		"SET xmloption = content", "SET client_min_messages = warning", "SET default_tablespace = ''",
		"SET default_table_access_method = heap", `SELECT pg_catalog.set_config('search_path', '"$user", public', false)`,
		`SET search_path = "$user", public`)
	for _, sql := range []string{
		"SET statement_timeout = 5000", "SET row_security = on", "SET search_path = other",
		"SELECT set_config('search_path', 'other', false)", "SELECT set_config('search_path', 'public', false)", "SELECT set_config('work_mem', '1MB', false)",
	} {
		if got := tagOrState(duck, sql); got == "SET" || got == "SELECT 1" {
			t.Errorf("%s on DuckDB: %s, want it refused", sql, got)
		}
	}
}

// TestPgDumpOnDuckDB: pg_dump 15 of a schema (serial and bigserial keys, a sequence a default
// takes values from, varchar(n), numeric(p,s), char(n), a CHECK, a unique and a foreign key, two
// indexes, a view, a table's and a column's comment) through the proxy on the embedded DuckDB, in plain and custom format: it ran
// into set_config, the session SETs, RESET search_path, LOCK TABLE, catalogs without tableoid,
// sequences read as relations. The plain dump's statements are checked one by one; pg_restore
// lists the custom one's. Restoring it into PostgreSQL is not yet the same schema (see RESULTS).
func TestPgDumpOnDuckDB(t *testing.T) {
	if _, err := exec.LookPath("pg_dump"); err != nil {
		t.Skip("pg_dump is not installed")
	}
	dsn := memoryDuckProxy(t, "pgdump").URL()
	duck := connect(t, dsn)
	for _, sql := range []string{
		"create table dp_author (id serial primary key, name varchar(80) not null, email text unique, created_at timestamp default now())",
		"create sequence dp_ticket_seq start 100",
		`create table dp_book (id bigserial primary key, author_id integer not null references dp_author(id), title text not null,
			price numeric(10,2) default 0, isbn char(13), published date, ticket integer default nextval('dp_ticket_seq'),
			constraint dp_book_price_check check (price >= 0))`,
		"create index dp_book_title_idx on dp_book (title)",
		"create unique index dp_book_isbn_idx on dp_book (isbn)",
		"create view dp_book_view as select b.id, b.title, a.name from dp_book b join dp_author a on a.id = b.author_id",
		"insert into dp_author (name, email) values ('Ann', 'ann@x')",
		"comment on table dp_author is 'who writes'",
		"comment on column dp_author.name is 'full name'",
	} {
		if _, err := duck.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var described string // psql's \dt+ and \d+ read them so
	err := duck.QueryRow(context.Background(), `select pg_catalog.obj_description('dp_author'::regclass, 'pg_class') || ' / ' ||
		pg_catalog.col_description('dp_author'::regclass, 2)`).Scan(&described)
	if err != nil || described != "who writes / full name" {
		t.Errorf("the comments read back: %q, %v", described, err)
	}
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	plain := run("pg_dump", "-s", "--no-owner", "-t", "dp_*", dsn)
	for _, want := range []string{
		"CREATE TABLE public.dp_author (\n    id integer DEFAULT nextval('dp_author_id_seq') NOT NULL,\n    name character varying(80) NOT NULL,",
		"    price numeric(10,2) DEFAULT 0,\n    isbn character(13),\n    published date,",
		"CONSTRAINT dp_book_price_check CHECK ((price >= 0))",
		"CREATE SEQUENCE public.dp_ticket_seq\n    START WITH 100\n",
		"CREATE VIEW public.dp_book_view AS\n SELECT b.id, b.title, a.\"name\" FROM dp_book",
		"ADD CONSTRAINT dp_author_email_key UNIQUE (email);",
		"ADD CONSTRAINT dp_book_pkey PRIMARY KEY (id);",
		"CREATE UNIQUE INDEX dp_book_isbn_idx ON public.dp_book USING btree (isbn);",
		"ADD CONSTRAINT dp_book_author_id_fkey FOREIGN KEY (author_id) REFERENCES dp_author(id);",
		"COMMENT ON TABLE public.dp_author IS 'who writes';",
		"COMMENT ON COLUMN public.dp_author.name IS 'full name';",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("pg_dump -s through the proxy lacks\n%s\nit printed:\n%s", want, plain)
		}
	}
	file := filepath.Join(t.TempDir(), "dump.fc")
	run("pg_dump", "-Fc", "-f", file, dsn)
	list := run("pg_restore", "--list", file)
	for _, want := range []string{"TABLE public dp_author", "SEQUENCE public dp_ticket_seq", "VIEW public dp_book_view",
		"TABLE DATA public dp_author", "SEQUENCE SET public dp_book_id_seq", "INDEX public dp_book_title_idx",
		"FK CONSTRAINT public dp_book dp_book_author_id_fkey", "COMMENT public COLUMN dp_author.name"} {
		if !strings.Contains(list, want) {
			t.Errorf("pg_restore --list of pg_dump -Fc lacks %q:\n%s", want, list)
		}
	}
}

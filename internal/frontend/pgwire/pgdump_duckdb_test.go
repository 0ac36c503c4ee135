package pgwire_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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
		`SET search_path = "$user", public`, "SELECT set_config('search_path', 'public', false)")
	for _, sql := range []string{
		"SET statement_timeout = 5000", "SET row_security = on", "SET search_path = other",
		"SELECT set_config('search_path', 'other', false)", "SELECT set_config('work_mem', '1MB', false)",
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
	plain := pgTool(t, "pg_dump", "-s", "--no-owner", "-t", "dp_*", dsn)
	for _, want := range []string{
		"CREATE TABLE public.dp_author (\n    id integer NOT NULL,\n    name character varying(80) NOT NULL,",
		"CREATE SEQUENCE public.dp_author_id_seq\n    AS integer\n",
		"ALTER SEQUENCE public.dp_author_id_seq OWNED BY public.dp_author.id;",
		"ALTER TABLE ONLY public.dp_author ALTER COLUMN id SET DEFAULT nextval('public.dp_author_id_seq'::regclass);",
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
	pgTool(t, "pg_dump", "-Fc", "-f", file, dsn)
	list := pgTool(t, "pg_restore", "--list", file)
	for _, want := range []string{"TABLE public dp_author", "SEQUENCE public dp_ticket_seq", "VIEW public dp_book_view",
		"TABLE DATA public dp_author", "SEQUENCE SET public dp_book_id_seq", "INDEX public dp_book_title_idx",
		"FK CONSTRAINT public dp_book dp_book_author_id_fkey", "COMMENT public COLUMN dp_author.name"} {
		if !strings.Contains(list, want) {
			t.Errorf("pg_restore --list of pg_dump -Fc lacks %q:\n%s", want, list)
		}
	}
}

// restoreSchema is a schema as applications declare it: serial, bigserial and smallserial keys,
// a sequence a default takes values from, foreign keys with actions (one of two columns),
// indexes, defaults, a CHECK, views over views and aggregates, a second schema.
var restoreSchema = []string{
	"create table dp_author (id serial primary key, name varchar(80) not null, email text unique, created_at timestamp default now(), active boolean default true, note text default 'none')",
	"create sequence dp_ticket_seq start 100",
	`create table dp_book (id bigserial primary key, author_id integer not null references dp_author(id) on delete cascade on update cascade,
		title text not null, price numeric(10,2) default 0, isbn char(13), published date, ticket integer default nextval('dp_ticket_seq'),
		constraint dp_book_price_check check (price >= 0))`,
	"create table dp_tag (id smallserial primary key, label varchar(20) unique)",
	"create table dp_book_tag (book_id bigint references dp_book(id) on delete cascade, tag_id smallint references dp_tag(id) on delete set null, primary key (book_id, tag_id))",
	"create table dp_edition (book_id bigint, n integer, year integer, primary key (book_id, n))",
	"create table dp_print (id serial primary key, book_id bigint, n integer, foreign key (book_id, n) references dp_edition(book_id, n) on delete restrict)",
	"create index dp_book_title_idx on dp_book (title)",
	"create index dp_book_two_idx on dp_book (author_id, published)",
	"create unique index dp_book_isbn_idx on dp_book (isbn)",
	"create view dp_a_view as select b.id, b.title, a.name from dp_book b join dp_author a on a.id = b.author_id",
	"create view dp_b_view as select count(*) as n from dp_a_view",
	`create view dp_c_view as select a.name, count(*) as n, sum(distinct a.id) as sd, length(a.name) as l, sum(a.id) as s,
		max(a.created_at) as m, a.name::text as t, extract(year from max(a.created_at)) as y
		from dp_author a group by a.name having count(*) > 0 order by a.name`,
	"create table dp_ident (id int generated always as identity primary key, x int)",
	"create table dp_ident2 (id bigint generated by default as identity (start with 100 increment by 5), y text)",
	"create schema dps",
	"create table dps.item (id serial primary key, label text default 'x')",
	"create view dps.item_view as select i.id, i.label from dps.item i",
	"insert into dp_author (name, email, created_at) values ('Ann', 'ann@x', '2026-01-02 03:04:05'), ('Bob', null, '2026-02-03 04:05:06')",
	"insert into dp_book (author_id, title, price) values (1, 'T', 3.5), (2, 'U', 1)",
	"insert into dp_tag (label) values ('x')",
	"insert into dp_book_tag values (1, 1)",
	"insert into dps.item (label) values ('y')",
	"insert into dp_ident (x) values (1), (2)",
	"insert into dp_ident2 (y) values ('a')",
	"comment on table dp_author is 'who writes'",
	"comment on column dp_author.name is 'full name'",
}

// TestPgDumpRestoresIntoPostgreSQL: pg_dump 15 of a database through the proxy on the embedded
// DuckDB, applied by psql to a fresh PostgreSQL database, runs without an error, and the
// restored schema is the one the same statements build in PostgreSQL (pg_dump -s of both
// compared): each sequence before the default that takes values from it, a serial's sequence
// of its column's type and OWNED BY it, views after what they read, a foreign key's actions,
// views in PostgreSQL's SQL. The rows and the sequences' next values come back too.
func TestPgDumpRestoresIntoPostgreSQL(t *testing.T) {
	if _, err := exec.LookPath("pg_dump"); err != nil {
		t.Skip("pg_dump is not installed")
	}
	direct, restored, dsn := pgtest.NewDatabase(t), pgtest.NewDatabase(t), memoryDuckProxy(t, "pgrestore").URL()
	pg, duck := connect(t, direct), connect(t, dsn)
	for _, sql := range restoreSchema {
		for name, c := range map[string]*pgx.Conn{"PostgreSQL": pg, "DuckDB": duck} {
			if _, err := c.Exec(context.Background(), sql); err != nil {
				t.Fatalf("%s on %s: %v", sql, name, err)
			}
		}
	}
	dump := pgTool(t, "pg_dump", "--no-owner", dsn)
	file := filepath.Join(t.TempDir(), "dump.sql")
	if err := os.WriteFile(file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	pgTool(t, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", file, restored)
	schema := func(url string) string {
		var kept []string
		for _, line := range strings.Split(pgTool(t, "pg_dump", "-s", "--no-owner", url), "\n") {
			if !strings.HasPrefix(line, `\`) && !strings.HasPrefix(line, "--") {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	if want, got := schema(direct), schema(restored); want != got {
		t.Errorf("pg_dump -s of the restored database:\n%s\nof the one built in PostgreSQL:\n%s\nthe dump restored:\n%s", got, want, dump)
	}
	back := connect(t, restored)
	queries := []string{"select * from dp_author order by id", "select * from dp_book order by id", "select * from dp_book_tag",
		"select * from dps.item", "select * from dp_c_view", "select * from dp_ident", "select * from dp_ident2", "select nextval('dp_author_id_seq'), nextval('dp_book_id_seq'), nextval('dp_tag_id_seq'), nextval('dp_ticket_seq')"}
	if want, got := tablesText(pg, queries...), tablesText(back, queries...); want != got {
		t.Errorf("rows restored:\n  %s\nbuilt in PostgreSQL:\n  %s", got, want)
	}
}

// pgTool runs a PostgreSQL client program and returns what it printed; it fails t when the
// program fails.
func pgTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

"""information_schema through psycopg2 and psycopg 3 (its server-side parameters too): a
client's own tables, views, columns and constraints, as PostgreSQL lists them; names qualified
with public; and the reset test suites run (DROP SCHEMA public CASCADE, CREATE SCHEMA public).
One line per query: the library, the query's number and the rows (or the error's SQLSTATE).

usage: python3 infoschema.py DSN
"""
import sys

import psycopg
import psycopg2

dsn = sys.argv[1]

SETUP = [
    "create table accounts (id integer primary key, name text not null)",
    "create table entries (id integer primary key, account integer references accounts(id), amount numeric(12,2))",
    "create view names as select name from accounts",
]

QUERIES = [
    ("select table_name, table_type from information_schema.tables where table_schema = %s order by 1", ("public",)),
    ('select "table_name" from "information_schema"."tables" where "table_schema" = %s and "table_name" like %s order by 1', ("public", "%s")),
    ("select table_name from information_schema.views where table_schema = current_schema()", None),
    ("select table_name, column_name, is_nullable from information_schema.columns where table_schema = %s and table_name = %s order by ordinal_position",
     ("public", "entries")),
    ("select table_name, constraint_type from information_schema.table_constraints where table_schema = current_schema()"
     " and constraint_type in ('PRIMARY KEY', 'FOREIGN KEY') order by 1, 2", None),
    ("select schema_name from information_schema.schemata where schema_name = %s", ("public",)),
    ("select count(*) from information_schema.tables where table_name like 'pg%%' and table_schema = %s", ("public",)),
    ("insert into public.accounts values (%s, %s)", (1, "a")),
    ('select a.name, count(e.id) from "public".accounts a left join public.entries e on e.account = a.id group by 1', None),
    ("select current_schema(), to_regclass(%s)::text", ("public.accounts",)),
    ("select schemaname, tablename from pg_tables where schemaname = %s order by 2", ("public",)),
]

# The reset: without CASCADE it fails (2BP01, objects depend on the schema); with it, nothing
# is left, and the schema is there again for the next library's run.
RESET = [
    ("drop schema public", None),
    ("drop schema public cascade", None),
    ("create schema public", None),
    ("select count(*) from information_schema.tables where table_schema = %s", ("public",)),
]


def run(label, connect, cursor_of):
    conn = connect()
    conn.autocommit = True
    cur = cursor_of(conn)
    for s in SETUP:
        cur.execute(s)
    for i, (sql, args) in enumerate(QUERIES + RESET):
        try:
            cur.execute(sql, args)
            rows = cur.fetchall() if cur.description else cur.rowcount
            print(f"{label} {i}: {[tuple(r) for r in rows] if cur.description else rows}")
        except Exception as e:  # the SQLSTATE, as both engines give one
            print(f"{label} {i}: error {getattr(e, 'pgcode', None) or getattr(e, 'sqlstate', None)}")
    conn.close()


run("psycopg2", lambda: psycopg2.connect(dsn), lambda c: c.cursor())
run("psycopg", lambda: psycopg.connect(dsn), lambda c: c.cursor())
# psycopg 3's server-side binding of each query's parameters, prepared at once.
run("psycopg prepared", lambda: psycopg.connect(dsn, prepare_threshold=0), lambda c: c.cursor())

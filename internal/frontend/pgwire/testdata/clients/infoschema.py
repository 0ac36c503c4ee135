"""information_schema through psycopg2 and psycopg 3 (its server-side parameters too): a
client's own tables, views, columns and constraints, as PostgreSQL lists them. One line per
query: the library, the query's number and the rows.

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
]


def run(label, connect, cursor_of):
    conn = connect()
    conn.autocommit = True
    cur = cursor_of(conn)
    for s in SETUP:
        cur.execute(s)
    for i, (sql, args) in enumerate(QUERIES):
        try:
            cur.execute(sql, args)
            print(f"{label} {i}: {[tuple(r) for r in cur.fetchall()]}")
        except Exception as e:  # the SQLSTATE, as both engines give one
            print(f"{label} {i}: error {getattr(e, 'pgcode', None) or getattr(e, 'sqlstate', None)}")
    for s in ("drop view names", "drop table entries", "drop table accounts"):
        cur.execute(s)
    conn.close()


run("psycopg2", lambda: psycopg2.connect(dsn), lambda c: c.cursor())
run("psycopg", lambda: psycopg.connect(dsn), lambda c: c.cursor())
# psycopg 3's server-side binding of each query's parameters, prepared at once.
run("psycopg prepared", lambda: psycopg.connect(dsn, prepare_threshold=0), lambda c: c.cursor())

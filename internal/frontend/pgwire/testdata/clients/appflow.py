# An application's day through psycopg2, as Django's and SQLAlchemy's backends use it: a table
# with a bigserial key and common types, executemany, RETURNING, RealDictCursor, IN and ANY of
# Python sequences, a duplicate key, a named (server-side) cursor, copy_expert, execute_values,
# rowcounts, aggregates. Prints one line per step: its label and result, or the error's SQLSTATE.
# Usage: python3 appflow.py DSN
import sys, json, datetime, decimal, io
import psycopg2, psycopg2.extras
dsn = sys.argv[1]
c = psycopg2.connect(dsn)
cur = c.cursor()
def step(label, fn):
    try:
        r = fn()
        print(label, r)
    except Exception as e:
        print(label, 'ERR', getattr(e, 'pgcode', None))
        c.rollback()
step('drop', lambda: cur.execute("drop table if exists p2"))
step('create', lambda: cur.execute("create table p2 (id bigserial primary key, name varchar(40) not null unique, qty integer default 0, price numeric(8,2), meta jsonb, seen timestamp with time zone, day date)"))
step('commit', c.commit)
step('many', lambda: cur.executemany("insert into p2 (name, qty, price, meta, seen, day) values (%s, %s, %s, %s, %s, %s)", [("a", 1, decimal.Decimal("1.50"), json.dumps({"x": 1}), datetime.datetime(2024,1,2,3,4,5,tzinfo=datetime.timezone.utc), datetime.date(2024,1,2)), ("b", 2, None, None, None, None)]))
step('returning', lambda: (cur.execute("insert into p2 (name) values (%s) returning id, qty", ("c",)), cur.fetchone())[1])
step('commit2', c.commit)
step('dict', lambda: (lambda d: (d.execute("select id, name, qty, price, meta, seen, day from p2 order by id"), [dict(r) for r in d.fetchall()])[1])(c.cursor(cursor_factory=psycopg2.extras.RealDictCursor)))
step('in', lambda: (cur.execute("select name from p2 where name in %s order by name", (("a", "b"),)), cur.fetchall())[1])
step('any', lambda: (cur.execute("select name from p2 where id = any(%s) order by name", ([1, 3],)), cur.fetchall())[1])
step('dup', lambda: cur.execute("insert into p2 (name) values ('a')"))
step('named', lambda: (lambda n: (n.execute("select id from p2 order by id"), n.fetchmany(2))[1])(c.cursor(name="srv")))
step('rollback', c.rollback)
step('copy', lambda: (cur.copy_expert("copy (select name, qty from p2 order by id) to stdout with csv", io.StringIO()) or "ok"))
step('values', lambda: (psycopg2.extras.execute_values(cur, "insert into p2 (name, qty) values %s", [("d", 4), ("e", 5)]), c.commit(), cur.execute("select count(*) from p2"), cur.fetchone())[3])
step('update', lambda: (cur.execute("update p2 set qty = qty + 1 where name = %(n)s", {"n": "a"}), cur.rowcount)[1])
step('delete', lambda: (cur.execute("delete from p2 where name = 'e'"), cur.rowcount)[1])
step('agg', lambda: (cur.execute("select count(*), sum(qty)::bigint, max(name), string_agg(name, ',' order by name) from p2"), cur.fetchone())[1])
step('sum', lambda: (cur.execute("select sum(qty), sum(id), length(name), initcap(name) from p2 group by name order by name"), cur.fetchall())[1])
step('arith', lambda: (cur.execute("update p2 set qty = qty * %s where name = %s returning qty", (3, "a")), cur.fetchall())[1])
# The errors an application tells apart by SQLSTATE (psycopg2.errors' classes).
step('err-syntax', lambda: cur.execute("selec 1"))
step('err-table', lambda: cur.execute("select * from no_such_table"))
step('err-column', lambda: cur.execute("select no_such_column from p2"))
step('err-function', lambda: cur.execute("select no_such_function(1)"))
step('err-arguments', lambda: cur.execute("select lower(1, 2, 3)"))
step('err-schema', lambda: cur.execute("select * from no_such_schema.t"))
step('err-type', lambda: cur.execute("select 1::no_such_type"))
step('err-not-null', lambda: cur.execute("insert into p2 (name) values (null)"))
step('err-cast', lambda: (cur.execute("select 'abc'::integer"), cur.fetchone())[1])
# Locking reads, as ORMs write them (Django's select_for_update, SQLAlchemy's with_for_update).
step('for-update', lambda: (cur.execute("select id from p2 where name = %s for update", ("a",)), cur.fetchall())[1])
step('skip-locked', lambda: (cur.execute("select id from p2 order by id limit 1 for update skip locked"), cur.fetchall())[1])
step('share-of', lambda: (cur.execute("select p2.id from p2 where id = 1 for no key update of p2 nowait"), cur.fetchall())[1])
step('for-commit', c.commit)
# jsonb operators as Django's JSONField lookups write them (contains, has_key, key paths).
step('json-contains', lambda: (cur.execute("select id from p2 where meta @> %s::jsonb order by id", ('{"x": 1}',)), cur.fetchall())[1])
step('json-contains-lit', lambda: (cur.execute("select count(*) from p2 where p2.meta @> '{\"x\": 2}'"), cur.fetchall())[1])
step('json-has-key', lambda: (cur.execute("select id from p2 where \"meta\" ? 'x' order by id"), cur.fetchall())[1])
step('json-path', lambda: (cur.execute("select meta #>> '{x}', meta #> '{x}' from p2 where meta is not null order by id"), cur.fetchall())[1])

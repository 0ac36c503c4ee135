"""A prepared statement across a change of what it reads, through psycopg 3 over the extended
protocol: re-executed (prepare=True: Bind/Execute of the kept statement, no new Parse) after an
ALTER of its table, a SET of the setting (application_name) and its table dropped and made again and a view it names replaced. Prints "case
NAME: RESULT" lines: the columns and rows a client reads, or the error's SQLSTATE.

usage: python3 prepared_change.py DSN TABLE
"""
import sys

import psycopg

dsn, t = sys.argv[1:3]
conn = psycopg.connect(dsn, autocommit=True)
cur = conn.cursor()


def run(sql, params=None, prepare=True):
    try:
        cur.execute(sql, params, prepare=prepare)
        if cur.description is None:
            return cur.statusmessage
        return "%s %s" % ([d.name for d in cur.description], cur.fetchall())
    except psycopg.Error as e:
        return "error " + (e.sqlstate or repr(e))


def case(name, *results):
    print("case %s: %s" % (name, " | ".join(results)), flush=True)


cur.execute("drop table if exists %s" % t)
cur.execute("create table %s (a int, s text)" % t)
cur.execute("insert into %s values (1, 'x'), (2, 'y')" % t)

star = "select * from %s where a = %%s" % t
case("star", run(star, (1,)), run(star, (2,)))
cur.execute("alter table %s add column b int default 7" % t)
case("star_added", run(star, (1,)), run(star, (1,)), run(star, (2,), prepare=False))
cur.execute("alter table %s drop column s" % t)
case("star_dropped", run(star, (1,)), run(star, (2,)), run(star, (2,), prepare=False))

named = "select a, b from %s where a = %%s" % t
case("named", run(named, (2,)))
cur.execute("alter table %s alter column b type text" % t)
case("named_retyped", run(named, (2,)), run(named, (2,)), run(named, (2,), prepare=False))

timeout = "select current_setting('application_name'), current_setting('TimeZone') = 'UTC' or current_setting('TimeZone') = 'Etc/UTC'"
case("setting", run(timeout))
cur.execute("set application_name = 'prepared_change'")
case("setting_set", run(timeout), run(timeout, prepare=False))

# The table it reads dropped and made again with the same columns: the statement reads the new
# one, outside a transaction and inside one (on the connection the transaction pins).
kept = t + "_kept"
cur.execute("drop table if exists %s" % kept)
cur.execute("create table %s (v text)" % kept)
cur.execute("insert into %s values ('first')" % kept)
read = "select v from %s" % kept
case("remade", run(read))
cur.execute("drop table %s" % kept)
cur.execute("create table %s (v text)" % kept)
cur.execute("insert into %s values ('second')" % kept)
case("remade_again", run(read))
with conn.transaction():
    case("remade_tx", run(read))
    cur.execute("drop table %s" % kept)
    cur.execute("create table %s (v text)" % kept)
    cur.execute("insert into %s values ('third')" % kept)
    case("remade_in_tx", run(read), run(read, prepare=False))
case("remade_after_tx", run(read))
cur.execute("drop table %s" % kept)

other = t + "_other"
cur.execute("drop table if exists %s" % other)
cur.execute("create table %s (v text)" % other)
cur.execute("insert into %s values ('old')" % other)
view = t + "_view"
cur.execute("create or replace view %s as select v from %s" % (view, other))
through = "select * from %s" % view
case("view", run(through))
cur.execute("create or replace view %s as select v, 'new' as w from %s" % (view, other))
case("view_replaced", run(through), run(through), run(through, prepare=False))
cur.execute("drop view %s" % view)
case("view_dropped", run(through), run(through, prepare=False))
cur.execute("drop table %s" % other)
cur.execute("drop table %s" % t)

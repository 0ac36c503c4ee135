# A writer's transaction ended by error 1213 (a deadlock: InnoDB rolled it back), through
# PyMySQL or mysqlclient (MySQLdb), MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PASSWORD, MYSQL_DB.
# Usage: python3 python_deadlock.py pymysql|mysqldb deadlock|commit
#   deadlock: two clients update two rows in opposite orders (MariaDB's deadlock, at a statement);
#   commit: one client's transaction the server cannot keep (the embedded DuckDB's: a refused
#   statement it cannot undo alone, after a write of RAND()'s value): its COMMIT is refused.
# Prints one JSON line per step: the error as the library raises it (its class, number, text),
# then whether the connection goes on, what the transaction left, and a next transaction.
import json
import os
import sys
import threading

lib, how = sys.argv[1:3]
if lib == "pymysql":
    import pymysql as driver

    def connect():
        return driver.connect(host=os.environ["MYSQL_HOST"], port=int(os.environ["MYSQL_PORT"]), user=os.environ["MYSQL_USER"],
                              password=os.environ["MYSQL_PASSWORD"], database=os.environ["MYSQL_DB"] or None, autocommit=True)
else:
    import MySQLdb as driver

    def connect():
        kw = {"db": os.environ["MYSQL_DB"]} if os.environ["MYSQL_DB"] else {}
        return driver.connect(host=os.environ["MYSQL_HOST"], port=int(os.environ["MYSQL_PORT"]), user=os.environ["MYSQL_USER"],
                              passwd=os.environ["MYSQL_PASSWORD"], autocommit=True, **kw)


def out(step, **kw):
    print(json.dumps({"step": step, **kw}, sort_keys=True), flush=True)


def run(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return [list(r) for r in cur.fetchall()]


def deadlocked(err):
    out("the error", cls=type(err).__name__, bases=[c.__name__ for c in type(err).__mro__ if c.__module__ != "builtins"][1:],
        number=err.args[0], text=err.args[1])


a, b = connect(), connect()
run(a, "drop table if exists dl")
run(a, "create table dl (id int primary key, v int)")
run(a, "insert into dl values (1, 0), (2, 0)")
victim = a
if how == "deadlock":
    a.begin()
    b.begin()
    run(a, "update dl set v = 1 where id = 1")
    run(b, "update dl set v = 2 where id = 2")
    errors = {}

    def a_second():
        try:
            run(a, "update dl set v = 1 where id = 2")
        except driver.MySQLError as e:
            errors["a"] = e
    t = threading.Thread(target=a_second)
    t.start()
    t.join(0.5)  # a waits for b's row
    try:
        run(b, "update dl set v = 2 where id = 1")
    except driver.MySQLError as e:
        errors["b"] = e
    t.join()
    (name, err), = errors.items()
    victim, other = (a, b) if name == "a" else (b, a)
    deadlocked(err)
    other.commit()
else:
    a.begin()
    run(a, "insert into dl values (3, 0)")
    run(a, "insert into dl values (4, floor(rand()))")
    try:
        run(a, "insert into dl values (3, 9)")
    except driver.MySQLError as e:
        out("the duplicate", number=e.args[0])
    try:
        a.commit()
        out("the error", cls="none")
    except driver.MySQLError as e:
        deadlocked(e)
try:
    out("goes on", rows=run(victim, "select 1"))
    out("in a transaction", rows=run(victim, "select @@in_transaction"))
    out("left", rows=run(victim, "select count(*) from dl where id > 2 or v <> 0 and v <> 1 and v <> 2"))
    victim.begin()
    run(victim, "insert into dl values (10, 10)")
    victim.commit()
    out("next transaction", rows=run(victim, "select id, v from dl where id = 10"))
except driver.MySQLError as e:
    out("failed", number=e.args[0], text=e.args[1])

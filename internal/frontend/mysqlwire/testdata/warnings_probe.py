# Two clients (a and b) of one MySQL-protocol server, through PyMySQL or mysqlclient (MySQLdb),
# interleave statements with warnings or errors: each must see its own warning count and SHOW
# WARNINGS, never the other's (mysql2_warnings.js does the same with node's mysql2).
# Usage: python3 warnings_probe.py pymysql|mysqldb host port user password db setup a_sql b_sql
# Prints one JSON line per step: {"probe": name, "ok": value} or {"probe": name, "error": errno}.
import json
import sys

lib, host, port, user, password, db, setup, a_sql, b_sql = sys.argv[1:10]
if lib == "pymysql":
    import pymysql as driver

    def connect():
        return driver.connect(host=host, port=int(port), user=user, password=password, database=db or None, autocommit=True)

    def warning_count(conn, cur):
        return cur._result.warning_count
else:
    import MySQLdb as driver

    def connect():
        kw = {"db": db} if db else {}
        return driver.connect(host=host, port=int(port), user=user, passwd=password, autocommit=True, **kw)

    def warning_count(conn, cur):
        return conn.warning_count()


def step(name, fn):
    try:
        out = {"probe": name, "ok": fn()}
    except driver.MySQLError as e:
        out = {"probe": name, "error": e.args[0]}
    print(json.dumps(out, sort_keys=True))


def run(conn, sql):
    def go():
        with conn.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
            return warning_count(conn, cur)
    return go


def query(conn, sql):
    def go():
        with conn.cursor() as cur:
            cur.execute(sql)
            return [[v if isinstance(v, (int, str)) else str(v) for v in r] for r in cur.fetchall()]
    return go


a, b = connect(), connect()
if setup:
    run(a, setup)()
step("a runs", run(a, a_sql))
step("a warning_count", query(a, "select @@warning_count"))
step("b sees none", query(b, "show warnings"))
step("b warning_count", query(b, "select @@warning_count"))
step("b runs", run(b, b_sql))
step("a sees its own", query(a, "show warnings"))
step("b sees its own", query(b, "show warnings"))
a.close()
b.close()

# Drives PyMySQL or mysqlclient through the ways a client names its database (the login's, USE,
# select_db's COM_INIT_DB, mysqlclient's change_user) against a cluster capped at one engine
# connection: first alone, then while another connection's transaction holds that connection.
# Every probe must answer (none may wait for the transaction's end); prints one JSON line each.
# Usage: python3 python_capped.py pymysql|mysqldb host port user password db other
# (db: the engine's own database; other: one more, holding table t with the row 7).
import json
import sys

lib, host, port, user, password, db, other = sys.argv[1:8]
if lib == "pymysql":
    import pymysql as driver
else:
    import MySQLdb as driver


def connect(to):
    kw = dict(host=host, port=int(port), user=user, autocommit=True)
    kw["password" if lib == "pymysql" else "passwd"] = password
    if to:
        kw["db"] = to
    return driver.connect(**kw)


def probe(name, fn):
    try:
        out = {"probe": name, "ok": fn()}
    except driver.MySQLError as e:
        out = {"probe": name, "error": [e.args[0], str(e.args[1]) if len(e.args) > 1 else ""]}
    print(json.dumps(out, sort_keys=True), flush=True)


def q(c, sql):
    def run():
        cur = c.cursor()
        cur.execute(sql)
        r = [list(x) for x in cur.fetchall()] if cur.description else None
        cur.close()
        return r
    return run


def call(fn, *args):
    def run():
        fn(*args)
        return "ok"
    return run


where = "select database() = '%s', database() = '%s'" % (db, other)
b = connect(other)
probe("login to the other database", q(b, where))
probe("its table", q(b, "select id from t"))
probe("use db", q(b, "use " + db))
probe("select 1", q(b, "select 1"))
probe("use other", q(b, "use " + other))
probe("the table after use", q(b, "select id from t"))
probe("select_db db", call(b.select_db, db))
probe("after select_db", q(b, where))
if lib == "mysqldb":
    probe("change_user other", call(b.change_user, user, password, other))
    probe("after change_user", q(b, "select id from t"))
b.close()

# Another connection's transaction holds the cluster's only engine connection.
a = connect(db)
probe("holder begins", q(a, "begin"))
probe("holder reads", q(a, "select 1 from dual"))
c = connect(other)
probe("login while held", call(lambda: None))
probe("use db while held", q(c, "use " + db))
probe("use other while held", q(c, "use " + other))
probe("select_db db while held", call(c.select_db, db))
if lib == "mysqldb":
    probe("change_user other while held", call(c.change_user, user, password, other))
probe("holder commits", q(a, "commit"))
probe("after the holder", q(c, where))
c.close()
a.close()

# Drives mysqlclient (MySQLdb) through the ways a client changes its database: USE, select_db
# (COM_INIT_DB) and change_user (COM_CHANGE_USER), to one that exists and one that does not,
# and what the session's database is after each. Prints one JSON line per probe.
# Usage: python3 python_usedb.py mysqldb host port user password db
import json
import sys

import MySQLdb as driver

_, host, port, user, password, db = sys.argv[1:7]
missing = "qf_no_such_db"
c = driver.connect(host=host, port=int(port), user=user, passwd=password, autocommit=True)


def probe(name, fn):
    try:
        out = {"probe": name, "ok": fn()}
    except driver.MySQLError as e:
        out = {"probe": name, "error": [e.args[0], str(e.args[1]) if len(e.args) > 1 else ""]}
    print(json.dumps(out, sort_keys=True))


def q(sql):
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


current = q("select database() = '%s', database() is null" % db)
probe("use", q("use " + db))
probe("database after use", current)
probe("use missing", q("use " + missing))
probe("database after use missing", current)
probe("use missing quoted", q("use `%s`" % missing))
probe("select_db missing", call(c.select_db, missing))
probe("database after select_db missing", current)
probe("select_db", call(c.select_db, db))
probe("change_user missing", call(c.change_user, user, password, missing))
probe("database after change_user missing", current)
probe("a statement after", q("select 1"))
probe("change_user", call(c.change_user, user, password, db))
probe("database after change_user", current)
probe("begin", q("begin"))
probe("use missing in a transaction", q("use " + missing))
probe("database in the transaction", current)
probe("commit", q("commit"))


def connect(to):
    def run():
        d = driver.connect(host=host, port=int(port), user=user, passwd=password, db=to, autocommit=True)
        cur = d.cursor()
        cur.execute("select database() = %s", (to,))
        r = [list(x) for x in cur.fetchall()]
        d.close()
        return r
    return run


probe("connect to the database", connect(db))
probe("connect to a missing database", connect(missing))

# Drives PyMySQL or mysqlclient (MySQLdb) through what a connection pool and a bulk loader ask
# of a session: SHOW WARNINGS after INSERT IGNORE and a SELECT with warnings, with autocommit
# off (the drivers' default: a transaction) and on; mysqlclient's change_user (COM_CHANGE_USER)
# to another login and back, with a wrong password, and what of the session survives it.
# Prints one JSON line per probe.
# Usage: python3 python_reset.py pymysql|mysqldb host port user password db other_user other_password
import json
import sys

lib, host, port, user, password, db, other_user, other_password = sys.argv[1:9]
if lib == "pymysql":
    import pymysql as driver
    connect = lambda autocommit: driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=autocommit)
else:
    import MySQLdb as driver
    connect = lambda autocommit: driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=autocommit)


def show(v):
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": v.hex()}
    if v is None or isinstance(v, (int, float, str)):
        return v
    return str(v)


def probe(conn, name, fn):
    try:
        cur = conn.cursor()
        try:
            out = {"probe": name, "ok": fn(cur)}
        finally:
            cur.close()
    except driver.MySQLError as e:
        out = {"probe": name, "error": [e.args[0], str(e.args[1]) if len(e.args) > 1 else ""]}
    print(json.dumps(out, sort_keys=True))


def rows(cur):
    return [[show(v) for v in r] for r in cur.fetchall()]


def q(sql):
    def run(cur):
        n = cur.execute(sql)
        return rows(cur) if cur.description else n
    return run


def warned(sql):
    def run(cur):
        n = cur.execute(sql)
        first = rows(cur) if cur.description else n
        cur.execute("show warnings")
        return [first, rows(cur)]
    return run


setup = connect(True)
probe(setup, "create", q("create table rs_t (id int primary key, s varchar(3))"))
setup.close()
for autocommit in (False, True):
    c = connect(autocommit)
    p = "autocommit %s: " % autocommit
    probe(c, p + "insert", q("insert into rs_t values (%d, 'a')" % (1 + autocommit * 10)))
    probe(c, p + "insert ignore", warned("insert ignore into rs_t values (%d, 'b'), (%d, 'toolong')" % (1 + autocommit * 10, 2 + autocommit * 10)))
    probe(c, p + "select with a warning", warned("select 1/0, 'x' + 1"))
    probe(c, p + "update with warnings", warned("update ignore rs_t set s = 'muchtoolong' where id = %d" % (1 + autocommit * 10)))
    probe(c, p + "select without", warned("select id from rs_t where id = %d" % (1 + autocommit * 10)))
    c.rollback()
    c.close()

if lib == "mysqldb":
    c = connect(True)

    def change(u, pw, database):
        def run(cur):
            c.change_user(u, pw, database)
            return "ok"
        return run

    probe(c, "set a user variable", q("set @rs_v = 5"))
    probe(c, "begin", q("begin"))
    probe(c, "insert in the transaction", q("insert into rs_t values (100, 'tx')"))
    probe(c, "change user", change(other_user, other_password, db))
    probe(c, "user variable after", q("select @rs_v"))
    probe(c, "transaction rolled back", q("select count(*) from rs_t where id = 100"))
    probe(c, "database after", q("select database()"))
    probe(c, "a statement after", q("select count(*) from rs_t"))
    probe(c, "set again", q("set @rs_v = 6"))
    probe(c, "change user wrong password", change(other_user, "not-the-password", db))
    probe(c, "after the wrong password", q("select @rs_v, database()"))
    probe(c, "change back", change(user, password, db))
    probe(c, "after changing back", q("select count(*) from rs_t"))
    c.close()

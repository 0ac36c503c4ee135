# Drives PyMySQL or mysqlclient (MySQLdb) through LOAD DATA LOCAL INFILE: a file of 2,000 lines
# with non-ASCII text loaded with local_infile on, autocommit on (a statement of its own) and off
# (in a transaction), a missing file, and local_infile off. Prints one JSON line per probe.
# Usage: python3 python_infile.py pymysql|mysqldb host port user password db dir
import json
import os
import sys

lib, host, port, user, password, db, tmp = sys.argv[1:8]
if lib == "pymysql":
    import pymysql as driver
    connect = lambda autocommit, local: driver.connect(host=host, port=int(port), user=user, password=password, database=db,
                                                       autocommit=autocommit, local_infile=local, charset="utf8mb4")
else:
    import MySQLdb as driver
    connect = lambda autocommit, local: driver.connect(host=host, port=int(port), user=user, passwd=password, db=db,
                                                       autocommit=autocommit, local_infile=1 if local else 0, charset="utf8mb4")


def probe(conn, name, fn):
    try:
        cur = conn.cursor()
        try:
            out = {"probe": name, "ok": fn(cur)}
        finally:
            cur.close()
    except driver.MySQLError as e:
        out = {"probe": name, "error": [e.args[0], str(e.args[1]) if len(e.args) > 1 else ""]}
    except Exception as e:  # a client's own failure (a missing file)
        out = {"probe": name, "client error": type(e).__name__}
    print(json.dumps(out, sort_keys=True))


def q(sql):
    def run(cur):
        n = cur.execute(sql)
        return [[str(v) for v in r] for r in cur.fetchall()] if cur.description else n
    return run


path = os.path.join(tmp, "lines.csv")
with open(path, "w", encoding="utf-8") as f:
    for i in range(2000):
        f.write("%d,ligne é %d\n" % (i, i))
load = "load data local infile '%s' into table li fields terminated by ',' (id, s)" % path

c = connect(True, True)
probe(c, "create", q("create table li (id int primary key, s varchar(20))"))
probe(c, "load", q(load))
probe(c, "loaded", q("select count(*), sum(id), max(s), min(s) from li"))
probe(c, "load duplicates", q(load))
probe(c, "load ignore", q(load.replace("into table", "ignore into table").replace(path, os.path.join(tmp, "lines.csv"))))
probe(c, "load replace", q(load.replace("into table", "replace into table")))
probe(c, "loaded again", q("select count(*) from li"))
probe(c, "missing file", q("load data local infile '%s' into table li" % os.path.join(tmp, "missing.csv")))
probe(c, "after the missing file", q("select count(*) from li"))
c.close()

c = connect(True, False)
probe(c, "local_infile off", q(load))
probe(c, "after local_infile off", q("select 1"))
c.close()

c = connect(False, True)
probe(c, "delete", q("delete from li"))
probe(c, "load in a transaction", q(load))
probe(c, "rollback", lambda cur: c.rollback())
probe(c, "after the transaction", q("select count(*) from li"))
c.close()

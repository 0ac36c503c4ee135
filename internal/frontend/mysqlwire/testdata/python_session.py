# Drives one PyMySQL or mysqlclient (MySQLdb) connection through a long session: the steps, a
# JSON array on standard input, each {sql, params, prepared}, run in order on one cursor after
# another; a prepared step's ? placeholders become the library's %s (both interpolate the
# parameters into the text on the client). Prints one JSON line per step: {"probe": "step N",
# "ok": rows} with every value a string or null, {"probe": "step N", "ok": "affected N"}, or
# {"probe": "step N", "error": errno}; the session goes on after an error.
# Usage: python3 python_session.py pymysql|mysqldb host port user password db < steps.json
import json
import sys

lib, host, port, user, password, db = sys.argv[1:7]
if lib == "pymysql":
    import pymysql as driver
    conn = driver.connect(host=host, port=int(port), user=user, password=password, database=db or None, autocommit=True)
else:
    import MySQLdb as driver
    kw = {"db": db} if db else {}
    conn = driver.connect(host=host, port=int(port), user=user, passwd=password, autocommit=True, **kw)


def cell(v):
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return str(v)


for i, s in enumerate(json.load(sys.stdin)):
    cur = conn.cursor()
    try:
        if s.get("prepared"):
            n = cur.execute(s["sql"].replace("?", "%s"), s.get("params") or [])
        else:
            n = cur.execute(s["sql"])
        if cur.description is None:
            out = {"probe": "step %d" % i, "ok": "affected %d" % n}
        else:
            out = {"probe": "step %d" % i, "ok": [[cell(v) for v in row] for row in cur.fetchall()]}
    except driver.MySQLError as e:
        out = {"probe": "step %d" % i, "error": e.args[0]}
    finally:
        cur.close()
    print(json.dumps(out, separators=(",", ":")), flush=True)
conn.close()

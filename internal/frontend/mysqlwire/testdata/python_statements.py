# Runs a JSON list of [sql, params or null] through PyMySQL or mysqlclient (MySQLdb) against a
# MySQL-protocol server, one session, and prints one JSON line per statement: its rows, or the
# error's code. Parameters are the library's own (both interpolate them on the client).
# Usage: python3 python_statements.py pymysql|mysqldb host port user password db file.json
import json
import sys

lib, host, port, user, password, db, path = sys.argv[1:8]
if lib == "pymysql":
    import pymysql as driver
    conn = driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=True)
else:
    import MySQLdb as driver
    conn = driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=True)

for i, (sql, params) in enumerate(json.load(open(path))):
    cur = conn.cursor()
    try:
        cur.execute(sql.replace("?", "%s"), params)
        rows = [[str(v) for v in r] for r in cur.fetchall()] if cur.description else cur.rowcount
        out = {"probe": f"{i} {sql}", "ok": rows}
    except driver.MySQLError as e:
        out = {"probe": f"{i} {sql}", "error": e.args[0]}
    finally:
        cur.close()
    print(json.dumps(out))
conn.close()

# Drives one PyMySQL connection through write statements and prints what the client sees of
# each: the steps, a JSON array of [sql, params or null] on standard input, run in order; prints
# one JSON line per step: {"step": N, "lastrowid", "rowcount", "warnings"} (warnings: the OK
# packet's count), or {"step": N, "error": errno}, or {"step": N, "rows": [...]} for a SELECT.
# Usage: python3 python_writecounts.py host port user db < steps.json
import json
import sys

import pymysql

host, port, user, db = sys.argv[1:5]
conn = pymysql.connect(host=host, port=int(port), user=user, password="", database=db, autocommit=True)
for i, (sql, params) in enumerate(json.load(sys.stdin)):
    cur = conn.cursor()
    try:
        cur.execute(sql.replace("?", "%s") if params else sql, params)
        if cur.description is not None:
            out = {"step": i, "rows": [[None if v is None else str(v) for v in r] for r in cur.fetchall()]}
        else:
            out = {"step": i, "lastrowid": cur.lastrowid, "rowcount": cur.rowcount, "warnings": conn._result.warning_count}
    except pymysql.MySQLError as e:
        out = {"step": i, "error": e.args[0]}
    finally:
        cur.close()
    print(json.dumps(out, separators=(",", ":")), flush=True)
conn.close()

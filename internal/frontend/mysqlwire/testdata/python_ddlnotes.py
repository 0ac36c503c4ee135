# Runs statements (a JSON array on standard input) on one PyMySQL connection and prints, for
# each, the warning count its OK packet carried and what SHOW WARNINGS then lists.
# Usage: python3 python_ddlnotes.py host port user db < statements.json
import json
import sys

import pymysql

host, port, user, db = sys.argv[1:5]
conn = pymysql.connect(host=host, port=int(port), user=user, password="", database=db or None, autocommit=True)
for sql in json.load(sys.stdin):
    with conn.cursor() as cur:
        cur.execute(sql)
        count = cur._result.warning_count
        cur.execute("SHOW WARNINGS")
        print(json.dumps({"sql": sql, "warning_count": count, "warnings": [list(r) for r in cur.fetchall()]}))
conn.close()

# Runs the statements of a file (separated by ";" at a line's end) on one mysqlclient connection
# and prints each one's affected rows and rows, or its error: a survey's output to diff.
# Usage: python3 run_statements.py port db < mysql_app_survey.sql
import sys, MySQLdb
c = MySQLdb.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", db=sys.argv[2], autocommit=True)
cur = c.cursor()
for s in sys.stdin.read().split(";\n"):
    s = s.strip()
    if not s: continue
    try:
        n = cur.execute(s)
        print(s[:100], "->", n, cur.fetchall() if cur.description else "")
    except MySQLdb.MySQLError as e:
        print(s[:100], "-> ERR", e.args)

"""psycopg 3 running a statement whose capacity lease is lost: what the application's retry
logic sees of the error (its SQLSTATE and whether psycopg raises it as TransactionRollback, the
class-40 error retried, rather than QueryCanceled), then the connection's next statement.
usage: python3 lease_lost.py DSN SQL"""
import sys

import psycopg
import psycopg.errors

dsn, sql = sys.argv[1], sys.argv[2]
conn = psycopg.connect(dsn, autocommit=True)
print("case started: yes", flush=True)
try:
    conn.execute(sql)
    print("case lost: none")
except psycopg.Error as e:
    kind = "TransactionRollback" if isinstance(e, psycopg.errors.TransactionRollback) else type(e).__name__
    print(f"case lost: {e.sqlstate} {kind}")
    print(f"message: {e}")
print(f"case after: {conn.execute('select 40 + 2').fetchone()[0]}")

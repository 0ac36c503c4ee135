"""psycopg 3 against a connection budget: statements prepared on the server (prepare=True)
until one is refused, then the connection's next statements.
usage: python3 held_budget.py DSN SIZE"""
import sys

import psycopg

dsn, size = sys.argv[1], int(sys.argv[2])


def padded(n):
    head = f"SELECT {n} /* "
    return head + "x" * (size - len(head) - 3) + " */"


conn = psycopg.connect(dsn, autocommit=True)
made, refused = 0, "none"
for i in range(10):
    try:
        conn.execute(padded(i), prepare=True)
        made += 1
    except psycopg.Error as e:
        refused = e.sqlstate
        break
print(f"case budget: {refused} after {made}")
after = conn.execute("select 40 + 2").fetchone()[0]
held = conn.execute(padded(0), prepare=True).fetchone()[0]
print(f"case after: {after} {held}")

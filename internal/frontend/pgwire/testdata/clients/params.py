"""A bare parameter as psycopg2 and psycopg 3 send it (SELECT %s): "case NAME: VALUE TYPE_OID" lines.
PostgreSQL types the parameter as the client declared it; the test holds DuckDB to the same.

usage: python3 params.py DSN
"""
import datetime
import sys
import uuid

import psycopg
import psycopg2

dsn = sys.argv[1]

VALUES = [
    ("date", datetime.date(2024, 1, 2)),
    ("timestamp", datetime.datetime(2024, 1, 2, 3, 4, 5, 6)),
    ("timestamptz", datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)),
    ("time", datetime.time(3, 4, 5)),
    ("interval", datetime.timedelta(days=1, seconds=7)),
    ("int", 5),
    ("bigint", 2 ** 40),
    ("float", 1.5),
    ("bool", True),
    ("text", "x"),
    ("bytes", b"\x01\x02"),
    ("uuid", uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
]


def show(v):
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (bytes, memoryview)):
        return bytes(v).hex()
    return repr(v)


def run(lib, execute):
    for name, v in VALUES:
        try:
            value, oid = execute(v)
            result = "%s %s" % (show(value), oid)
        except Exception as e:
            result = "error %s" % (getattr(e, "pgcode", None) or getattr(getattr(e, "diag", None), "sqlstate", None) or repr(e))
        print("case %s %s: %s" % (lib, name, result), flush=True)


c2 = psycopg2.connect(dsn)
c2.autocommit = True


def psycopg2_execute(v):
    cur = c2.cursor()
    cur.execute("select %s", (v,))
    return cur.fetchone()[0], cur.description[0][1]


run("psycopg2", psycopg2_execute)

c3 = psycopg.connect(dsn, autocommit=True)
for binary in (False, True):
    def psycopg3_execute(v):
        cur = c3.cursor(binary=binary)
        cur.execute("select %s", (v,))
        return cur.fetchone()[0], cur.description[0].type_code
    run("psycopg3_binary" if binary else "psycopg3", psycopg3_execute)

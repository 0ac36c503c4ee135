# Drives PyMySQL or mysqlclient (MySQLdb) as an application stores rows: executemany of a
# multi-row INSERT whose parameters are bytes (not UTF-8 too), decimals, dates, datetimes and
# None, then reads them back with a parameter of each kind. Prints one line per step.
# Usage: python3 python_executemany.py pymysql|mysqldb host port user db
import datetime
import decimal
import sys

lib, host, port, user, db = sys.argv[1:6]
if lib == "pymysql":
    import pymysql as driver
    conn = driver.connect(host=host, port=int(port), user=user, password="", database=db, autocommit=True)
else:
    import MySQLdb as driver
    conn = driver.connect(host=host, port=int(port), user=user, passwd="", db=db, autocommit=True)

rows = [
    (1, b"\x00\x01\xff\xfe", decimal.Decimal("1.50"), datetime.date(2020, 1, 2), datetime.datetime(2020, 1, 2, 3, 4, 5), "a"),
    (2, "é".encode() + b"\xff'\\", decimal.Decimal("-2.25"), None, None, "b'q\n"),
    (3, b"\xfe\xff plain", None, datetime.date(1999, 12, 31), datetime.datetime(1999, 12, 31, 23, 59, 59), None),
    (4, None, decimal.Decimal("0.00"), None, None, "é"),
]
cur = conn.cursor()
cur.execute("create table em (id int primary key, b blob, d decimal(10,2), day date, at datetime, s varchar(20))")
cur.executemany("insert into em (id, b, d, day, at, s) values (%s, %s, %s, %s, %s, %s)", rows)
print("executemany", cur.rowcount)
cur.execute("insert into em (id, b) values (%s, %s)", (5, b"\xff\xfe"))  # nothing for a client to escape
print("execute", cur.rowcount)


def show(v):
    return v.hex() if isinstance(v, (bytes, bytearray)) else str(v)


cur.execute("select id, b, d, day, at, s from em order by id")
for r in cur.fetchall():
    print("row", [show(v) for v in r])
for name, sql, arg in [("by bytes", "select id from em where b = %s", rows[0][1]),
                       ("by decimal", "select id from em where d = %s", decimal.Decimal("-2.25")),
                       ("by date", "select id from em where day = %s", datetime.date(1999, 12, 31))]:
    cur.execute(sql, (arg,))
    print(name, [r[0] for r in cur.fetchall()])
cur.execute("drop table em")
conn.close()

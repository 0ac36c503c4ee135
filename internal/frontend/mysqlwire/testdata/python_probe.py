# Drives PyMySQL or mysqlclient (MySQLdb) against a MySQL-protocol server and prints one JSON
# line per probe: column descriptions, values, warnings, stacked statements, errors.
# Usage: python3 python_probe.py pymysql|mysqldb host port user password db
# MYSQL_SSL_CA, when set, connects over TLS, verifying the server's certificate and that it
# names the host against that CA.
import json
import os
import sys

lib, host, port, user, password, db = sys.argv[1:7]
ca = os.environ.get("MYSQL_SSL_CA")
if lib == "pymysql":
    import pymysql as driver
    tls = {"ssl": {"ca": ca}} if ca else {}
    conn = driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=True, **tls)
else:
    import MySQLdb as driver
    tls = {"ssl": {"ca": ca}} if ca else {}  # libmariadb refuses a server without TLS then
    conn = driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=True, **tls)


def show(v):
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": v.hex()}
    if v is None or isinstance(v, (int, float, str)):
        return v
    return str(v)


def probe(name, fn):
    cur = conn.cursor()
    try:
        out = {"probe": name, "ok": fn(cur)}
    except driver.MySQLError as e:
        out = {"probe": name, "error": e.args[0]}
    finally:
        cur.close()
    print(json.dumps(out, sort_keys=True))


def select(sql):
    def run(cur):
        cur.execute(sql)
        desc = [[d[0], d[1]] for d in cur.description]
        return [desc, [[show(v) for v in row] for row in cur.fetchall()]]
    return run


def warnings(sql):
    def run(cur):
        cur.execute(sql)
        n = conn.warning_count() if lib == "mysqldb" else cur._result.warning_count
        cur.execute("show warnings")
        return [n, [list(r) for r in cur.fetchall()]]
    return run


probe("names", lambda cur: (cur.execute("select count(*), 40+2, lower('A'), 'abc', 1 as one"), [d[0] for d in cur.description])[1])
probe("create", lambda cur: cur.execute("create table t (id int primary key, j json, d decimal(10,2), dt datetime, b blob, u bigint unsigned, s varchar(5))"))
probe("insert", lambda cur: cur.execute("insert into t values (1, '{\"a\": 1}', 1.25, '0000-00-00 00:00:00', x'00ff', 18446744073709551615, 'abc')"))
probe("select", select("select * from t"))
probe("warnings", warnings("insert ignore into t (id, s) values (2, 'too long for five')"))
probe("stacked", lambda cur: cur.execute("select 1; select 2"))
probe("no such table", lambda cur: cur.execute("select * from no_such_table"))
if ca and lib == "pymysql":  # PyMySQL goes on without TLS when the server offers none; mysqlclient's ssl_mode refuses to
    probe("client tls", lambda cur: type(conn._sock).__name__)
conn.close()

# A client library's common flows, printed one line each, to compare servers (clientsurvey_oracle_test.go):
# clientsurvey.py LIB HOST PORT USER PASSWORD DB
import sys

lib, host, port, user, password, db = sys.argv[1:7]
if lib == "pymysql":
    import pymysql as m
    from pymysql.constants import CLIENT
    import pymysql.cursors as cursors
    conn = m.connect(host=host, port=int(port), user=user, password=password, database=db, charset="utf8mb4",
                     autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS, local_infile=False)
    ss = cursors.SSCursor
else:
    import MySQLdb as m
    from MySQLdb.constants import CLIENT
    import MySQLdb.cursors as cursors
    conn = m.connect(host=host, port=int(port), user=user, passwd=password, db=db, charset="utf8mb4",
                     autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS)
    ss = cursors.SSCursor


def show(label, f):
    try:
        print(label, repr(f()))
    except Exception as e:
        print(label, "error", type(e).__name__, e.args[0] if e.args else "")


cur = conn.cursor()
cur.execute("DROP TABLE IF EXISTS sv")
cur.execute("CREATE TABLE sv (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20) NOT NULL UNIQUE, "
            "price DECIMAL(10,2), at DATETIME(6), flag BOOLEAN, note VARCHAR(30))")
show("ping", lambda: conn.ping() and None)
cur.executemany("INSERT INTO sv (name, price, at, flag, note) VALUES (%s, %s, %s, %s, %s)",
                [("a", "1.50", "2024-03-04 05:06:07.123456", True, None), ("b", "-2.00", "2024-12-31 23:59:59", False, "é")])
show("executemany rowcount", lambda: cur.rowcount)
show("lastrowid", lambda: cur.lastrowid)


def described(q):
    cur.execute(q)
    return [(d[0], d[1], d[6]) for d in cur.description], cur.fetchall()


show("description", lambda: described("SELECT id, name, price, at, flag, note FROM sv ORDER BY id"))
show("expressions", lambda: described("SELECT MIN(id) AS n, SUM(price) AS s, MAX(at) AS m, CONCAT(name, '!') AS c FROM sv GROUP BY name ORDER BY name"))
show("params", lambda: described("SELECT id FROM sv WHERE name = %s AND price > %s" % ("'a'", "1")))


def multi():
    cur.execute("SELECT 1 AS x; SELECT 'two' AS y, 2 AS z")
    out = [cur.fetchall()]
    while cur.nextset():
        out.append(cur.fetchall())
    return out


show("multi statements", multi)


def streamed():
    c = conn.cursor(ss)
    c.execute("SELECT id, name FROM sv ORDER BY id")
    rows = [c.fetchone(), c.fetchone(), c.fetchone()]
    c.close()
    return rows


show("server-side cursor", streamed)
show("duplicate key", lambda: cur.execute("INSERT INTO sv (name) VALUES ('a')"))
show("syntax error", lambda: cur.execute("SELEC 1"))
show("missing table", lambda: cur.execute("SELECT * FROM no_such_table_sv"))
if lib == "pymysql":  # local_infile off: refused (mysqlclient's on: MariaDB loads, the proxy on DuckDB refuses)
    show("load data local", lambda: cur.execute("LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE sv"))
show("still serving", lambda: described("SELECT name FROM sv WHERE id = 1"))
show("update rowcount", lambda: cur.execute("UPDATE sv SET price = price WHERE id = 1"))
show("charset", lambda: described("SELECT @@character_set_client, @@character_set_results, @@collation_connection"))
show("time zone", lambda: described("SELECT @@time_zone, @@system_time_zone"))
conn.close()

# Drives PyMySQL or mysqlclient (MySQLdb) logged in with a character set (latin1, utf8,
# utf8mb4) against a MySQL-protocol server and prints one JSON line per probe: the session's
# character set variables, text stored and read back in latin1 and utf8mb4 tables, its bytes
# (hex), LIKE with a parameter, literals, an error naming a non-ASCII table, and (PyMySQL) each
# column's charset number and length as the server sent them.
# Usage: python3 python_charset.py pymysql|mysqldb host port user password db charset autocommit
import json
import sys

lib, host, port, user, password, db, charset, autocommit = sys.argv[1:9]
autocommit = autocommit == "1"
if lib == "pymysql":
    import pymysql as driver
    conn = driver.connect(host=host, port=int(port), user=user, password=password, database=db,
                          charset=charset, autocommit=autocommit)
else:
    import MySQLdb as driver
    conn = driver.connect(host=host, port=int(port), user=user, passwd=password, db=db,
                          charset=charset, autocommit=autocommit)


def fields(cur):
    res = getattr(cur, "_result", None)
    if res is None or not hasattr(res, "fields"):
        return None  # mysqlclient keeps them in C
    return [[f.name, f.charsetnr, f.length] for f in res.fields]


def probe(name, sql, args=None):
    cur = conn.cursor()
    try:
        cur.execute(sql, args)
        rows = [list(r) for r in cur.fetchall()] if cur.description else cur.rowcount
        out = {"probe": name, "ok": rows, "fields": fields(cur)}
    except driver.MySQLError as e:
        out = {"probe": name, "error": [e.args[0], str(e.args[1]) if len(e.args) > 1 else ""]}
    except UnicodeError as e:  # the client could not decode what came: mojibake's other face
        out = {"probe": name, "error": ["unicode", str(e)]}
    finally:
        cur.close()
    print(json.dumps(out, sort_keys=True, default=lambda v: v.hex() if isinstance(v, (bytes, bytearray)) else str(v)))


text = "h\u00e9llo \u00ff"
cur = conn.cursor()
cur.execute("drop table if exists cs_l, cs_u")  # an earlier run's
cur.close()
probe("variables", "select @@character_set_client, @@character_set_results, @@character_set_connection, @@collation_connection")
probe("create latin1", "create table cs_l (id int primary key, v varchar(20)) default charset=latin1")
probe("create utf8mb4", "create table cs_u (id int primary key, v varchar(20), b varbinary(20)) default charset=utf8mb4")
probe("insert latin1", "insert into cs_l values (1, %s)", (text,))
probe("insert utf8mb4", "insert into cs_u values (1, %s, %s)", (text, text.encode("latin1")))
probe("select latin1", "select v, hex(v), length(v), char_length(v) from cs_l")
probe("select utf8mb4", "select v, hex(v), length(v), char_length(v), b from cs_u")
probe("like latin1", "select count(*) from cs_l where v like %s", ("h\u00e9%",))
probe("like utf8mb4", "select count(*) from cs_u where v like %s", ("h\u00e9%",))
probe("literal", "select 'caf\u00e9' as lit, hex('caf\u00e9') as h, upper('\u00e9t\u00e9') as u")
probe("concat", "select concat(l.v, '-', u.v) from cs_l l join cs_u u using (id)")
if charset != "latin1":
    probe("four bytes", "select '\U0001F600' as e, hex('\U0001F600') as h")
    probe("insert four bytes", "insert into cs_u values (2, %s, null)", ("smile \U0001F600",))
if lib == "pymysql":  # mysqlclient 1.4.6 dies of it (SIGSEGV), from MariaDB itself too
    probe("error names", "select * from `cs_\u00e9`")
probe("set names latin1", "set names latin1")
probe("variables after", "select @@character_set_client, @@character_set_results, @@collation_connection")
probe("select after", "select hex(v) from cs_l")
probe("set names back", "set names " + ("utf8mb4" if charset == "utf8mb4" else charset if charset != "utf8" else "utf8"))
probe("select back", "select hex(v), v from cs_u")
if not autocommit:
    conn.commit()

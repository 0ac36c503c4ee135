# Drives PyMySQL or mysqlclient (MySQLdb) through stored procedures: callproc with IN and OUT
# parameters (the driver's SET @_name_n, CALL, then SELECT of the OUT values), and CALL's
# result sets (nextset), with autocommit off (the drivers' default) and on. Prints one JSON line
# per probe. Usage: python3 python_callproc.py pymysql|mysqldb host port user password db
import json
import sys

lib, host, port, user, password, db = sys.argv[1:7]
if lib == "pymysql":
    import pymysql as driver
    connect = lambda autocommit: driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=autocommit)
else:
    import MySQLdb as driver
    connect = lambda autocommit: driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=autocommit)


def show(v):
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": v.hex()}
    if v is None or isinstance(v, (int, float, str)):
        return v
    return str(v)


def probe(conn, name, fn):
    cur = conn.cursor()
    try:
        out = {"probe": name, "ok": fn(cur)}
    except driver.MySQLError as e:
        out = {"probe": name, "error": e.args[0]}
    finally:
        cur.close()
    print(json.dumps(out, sort_keys=True))


def results(cur):
    """Every result set of the last statement, and the rows counts of those without."""
    out = []
    while True:
        if cur.description:
            out.append([[show(v) for v in row] for row in cur.fetchall()])
        else:
            out.append(cur.rowcount)
        if not cur.nextset():
            return out


def callproc(name, args, out_count):
    def run(cur):
        cur.callproc(name, args)
        sets = results(cur)
        cur.execute("SELECT " + ", ".join("@_%s_%d" % (name, i) for i in range(len(args))))
        return [sets, [show(v) for v in cur.fetchone()]]
    return run


def call(sql):
    def run(cur):
        cur.execute(sql)
        return results(cur)
    return run


setup = connect(True)
probe(setup, "create", lambda cur: [cur.execute("create table cp (id int primary key, v int)"), cur.execute("insert into cp values (1, 10), (2, 20)")])
probe(setup, "create out", lambda cur: cur.execute("create procedure cp_out(in a int, out b int, inout c int) begin set b = a * 2; set c = c + a; end"))
probe(setup, "create one select", lambda cur: cur.execute("create procedure cp_one(in a int, out b int) begin select id, v from cp where id <= a order by id; set b = a + 100; end"))
probe(setup, "create two selects", lambda cur: cur.execute("create procedure cp_two(in a int) begin select a as x; select v from cp order by id; end"))
probe(setup, "create changing", lambda cur: cur.execute("create procedure cp_change(in a int) begin update cp set v = v + a; end"))
setup.close()

for autocommit in (False, True):
    conn = connect(autocommit)
    mode = "autocommit" if autocommit else "transaction"
    probe(conn, mode + " callproc out", callproc("cp_out", (3, 0, 5), 3))
    probe(conn, mode + " callproc one select", callproc("cp_one", (2, 0), 2))
    probe(conn, mode + " call changing", call("call cp_change(1)"))
    probe(conn, mode + " call two selects", call("call cp_two(7)"))
    probe(conn, mode + " after", call("select id, v from cp order by id"))
    conn.commit()
    conn.close()

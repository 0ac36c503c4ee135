# Reads a result through cursors and prints one JSON line per probe ({"probe": name, ...}):
# libmariadb's server-side cursor (mysql_stmt_attr_set STMT_ATTR_CURSOR_TYPE =
# CURSOR_TYPE_READ_ONLY with STMT_ATTR_PREFETCH_ROWS, so COM_STMT_EXECUTE carries the cursor
# flag and rows come by COM_STMT_FETCH where the server opens one), through ctypes; then
# PyMySQL's and mysqlclient's SSCursor (mysql_use_result: rows read as they are fetched), a
# partial read and the next statement after it.
# Usage: python3 python_cursors.py libmariadb|pymysql|mysqldb host port user password db
import ctypes
import json
import sys

which, host, port, user, password, db = sys.argv[1:7]


def out(name, **kw):
    kw["probe"] = name
    print(json.dumps(kw), flush=True)


class Bind(ctypes.Structure):  # MYSQL_BIND of libmariadb 3
    _fields_ = [("length", ctypes.POINTER(ctypes.c_ulong)), ("is_null", ctypes.POINTER(ctypes.c_char)),
                ("buffer", ctypes.c_void_p), ("error", ctypes.POINTER(ctypes.c_char)), ("row_ptr", ctypes.c_void_p),
                ("store_param_func", ctypes.c_void_p), ("fetch_result", ctypes.c_void_p), ("skip_result", ctypes.c_void_p),
                ("buffer_length", ctypes.c_ulong), ("offset", ctypes.c_ulong), ("length_value", ctypes.c_ulong),
                ("flags", ctypes.c_uint), ("pack_length", ctypes.c_uint), ("buffer_type", ctypes.c_int),
                ("error_value", ctypes.c_char), ("is_unsigned", ctypes.c_char), ("long_data_used", ctypes.c_char),
                ("is_null_value", ctypes.c_char), ("extension", ctypes.c_void_p)]


def libmariadb():
    lib = ctypes.CDLL("libmariadb.so.3")
    V, P, I, UL = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_ulong
    for name, res, args in [
        ("mysql_init", V, [V]), ("mysql_real_connect", V, [V, P, P, P, P, ctypes.c_uint, P, UL]),
        ("mysql_error", P, [V]), ("mysql_errno", ctypes.c_uint, [V]), ("mysql_close", None, [V]),
        ("mysql_stmt_init", V, [V]), ("mysql_stmt_prepare", I, [V, P, UL]),
        ("mysql_stmt_attr_set", ctypes.c_char, [V, I, V]), ("mysql_stmt_execute", I, [V]),
        ("mysql_stmt_bind_result", ctypes.c_char, [V, V]), ("mysql_stmt_fetch", I, [V]),
        ("mysql_stmt_errno", ctypes.c_uint, [V]), ("mysql_stmt_close", ctypes.c_char, [V]),
        ("mysql_query", I, [V, P]), ("mysql_store_result", V, [V]), ("mysql_free_result", None, [V]),
        ("mysql_fetch_row", ctypes.POINTER(P), [V]),
    ]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args

    STMT_ATTR_CURSOR_TYPE, STMT_ATTR_PREFETCH_ROWS, CURSOR_TYPE_READ_ONLY = 1, 2, 1
    MYSQL_TYPE_LONG, MYSQL_TYPE_STRING = 3, 254

    conn = lib.mysql_init(None)
    if not lib.mysql_real_connect(conn, host.encode(), user.encode(), password.encode(), db.encode(), int(port), None, 0):
        sys.exit("connect: %s" % lib.mysql_error(conn).decode())

    def cursor_read(name, sql, prefetch, stop=None):
        st = lib.mysql_stmt_init(conn)
        kind, rows = UL(CURSOR_TYPE_READ_ONLY), UL(prefetch)
        lib.mysql_stmt_attr_set(st, STMT_ATTR_CURSOR_TYPE, ctypes.byref(kind))
        lib.mysql_stmt_attr_set(st, STMT_ATTR_PREFETCH_ROWS, ctypes.byref(rows))
        q = sql.encode()
        if lib.mysql_stmt_prepare(st, q, len(q)) or lib.mysql_stmt_execute(st):
            out(name, error=lib.mysql_stmt_errno(st))
            lib.mysql_stmt_close(st)
            return
        binds = (Bind * 2)()
        ident, text, tlen, null0, null1 = ctypes.c_int(), ctypes.create_string_buffer(64), UL(), ctypes.c_char(), ctypes.c_char()
        binds[0].buffer_type, binds[0].buffer, binds[0].is_null = MYSQL_TYPE_LONG, ctypes.cast(ctypes.pointer(ident), V), ctypes.pointer(null0)
        binds[1].buffer_type, binds[1].buffer, binds[1].buffer_length = MYSQL_TYPE_STRING, ctypes.cast(text, V), 64
        binds[1].length, binds[1].is_null = ctypes.pointer(tlen), ctypes.pointer(null1)
        lib.mysql_stmt_bind_result(st, binds)
        got = []
        while stop is None or len(got) < stop:
            rc = lib.mysql_stmt_fetch(st)
            if rc != 0:
                if rc != 100:  # MYSQL_NO_DATA
                    got.append(["fetch", rc, lib.mysql_stmt_errno(st)])
                break
            got.append([ident.value, text.raw[:tlen.value].decode()])
        lib.mysql_stmt_close(st)
        out(name, rows=got)


    cursor_read("cursor", "select id, name from cur order by id", 2)
    cursor_read("cursor prefetch 1", "select id, name from cur where id > ? order by id".replace("?", "3"), 1)
    cursor_read("cursor closed after 3 rows", "select id, name from cur order by id", 2, stop=3)
    cursor_read("cursor on no rows", "select id, name from cur where id < 0", 2)
    cursor_read("cursor error", "select id, name from cur_missing", 2)
    ok = lib.mysql_query(conn, b"select count(*) from cur") == 0
    res = lib.mysql_store_result(conn)
    row = lib.mysql_fetch_row(res)[0] if res else None
    if res:
        lib.mysql_free_result(res)
    out("after cursors", ok=ok, count=row.decode() if row else None)
    lib.mysql_close(conn)


def sscursor(libname):
    if libname == "pymysql":
        import pymysql as driver
        import pymysql.cursors as cursors
        c = driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=True)
    else:
        import MySQLdb as driver
        import MySQLdb.cursors as cursors
        c = driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=True)
    cur = c.cursor(cursors.SSCursor)
    cur.execute("select id, name from cur order by id")
    out(libname + " sscursor fetchmany", rows=[list(r) for r in cur.fetchmany(3)])
    out(libname + " sscursor rest", rows=[list(r) for r in cur.fetchall()])
    cur.execute("select id from cur where id > 18 order by id")
    first = cur.fetchone()
    cur.close()  # the rest read and dropped
    cur = c.cursor()
    cur.execute("select count(*) from cur")
    out(libname + " after a partial read", first=list(first), count=cur.fetchone()[0])
    c.close()


if which == "libmariadb":
    libmariadb()
else:
    sscursor(which)

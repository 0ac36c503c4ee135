"""Cases for psycopg2 and psycopg 3 through the proxy: one "case NAME: RESULT" line each.

usage: python3 cases.py psycopg2|psycopg3 DSN session|transaction TABLE
"""
import io
import select
import sys

lib, dsn, mode, table = sys.argv[1:5]


def case(name, fn):
    try:
        result = fn()
    except Exception as e:  # the error's SQLSTATE is the result
        result = "error %s" % (getattr(e, "pgcode", None) or getattr(getattr(e, "diag", None), "sqlstate", None) or repr(e))
    print("case %s: %s" % (name, result), flush=True)


SESSION_STEPS = 64


def session_step(i, table, rows, nulls):
    """Statement i of a long session: (sql, params or None, the result as cells() writes it).
    rows and nulls count what the session inserted into table, and with b NULL."""
    kind = i % 8
    if kind == 0:
        return "select %d as n, 'row-%d' as s, null as z" % (i, i), None, "%d|row-%d|null" % (i, i)
    if kind == 1:
        return "select %s::int + 1, %s::text, %s::text", (i, "p-%d" % i, None), "%d|p-%d|null" % (i + 1, i)
    if kind == 2:
        if i % 16 == 10:
            return "select * from no_such_table_%d" % i, None, "error 42P01"
        return "selec %d" % i, None, "error 42601"
    if kind == 3:
        k = i % 5 + 2
        return ("select x, x * x from generate_series(0, %d) as g(x) order by x" % (k - 1), None,
                ";".join("%d|%d" % (x, x * x) for x in range(k)))
    if kind == 4:
        return "insert into %s values (%d, 'v-%d')" % (table, i, i), None, "1"
    if kind == 5:
        return ("select case when x = %s::int then null else x end from generate_series(0, 3) as g(x) order by g.x", (i % 4,),
                ";".join("null" if x == i % 4 else str(x) for x in range(4)))
    if kind == 6:
        return "select count(*), count(b) from %s" % table, None, "%d|%d" % (rows, rows - nulls)
    return "insert into %s values (%%s::int, %%s::text)" % table, (1000 + i, None), "1"


# PostgreSQL's semantics a client sees on any engine: integers divide as integers, ~ searches,
# SIMILAR TO reads SQL's patterns, quote_ident quotes a keyword, to_char writes digit positions.
SEMANTICS = ("select (7/2)::text, (-7/2)::text, ('abc' ~ 'b')::text, ('ABC' ~* 'b')::text, ('abc' ~ '^b')::text, "
             "('abc' similar to 'a%')::text, ('abc' similar to 'a.c')::text, quote_ident('select'), "
             "to_char(1234.5, 'FM9,999.00')")


def sqlstate(e):
    return getattr(e, "pgcode", None) or getattr(getattr(e, "diag", None), "sqlstate", None) or repr(e)


def nested_tx(execute, commit, rollback, table):
    """Django's nested atomic blocks (SQLAlchemy's begin_nested): a savepoint taken and
    released, another taken and rolled back to, then the transaction ended and the connection
    used again. "ROLLBACK TO's answer, the next statement's, the rows kept"."""
    execute("create table %s (a int)" % table)
    commit()
    execute("insert into %s values (1)" % table)
    execute("savepoint s1")
    execute("insert into %s values (2)" % table)
    execute("release savepoint s1")
    execute("savepoint s2")
    execute("insert into %s values (3)" % table)
    out, failed = [], False
    for sql in ("rollback to savepoint s2", "select 1"):
        try:
            out.append(execute(sql))
        except Exception as e:
            out.append("error " + sqlstate(e))
            failed = True
    rollback() if failed else commit()
    out.append(execute("select count(*) from %s" % table))
    commit()
    return " ".join(out)


def cells(cur):
    """A statement's result: its rows' values joined by | and ;, or its row count."""
    if cur.description is None:
        return str(cur.rowcount)
    return ";".join("|".join("null" if v is None else str(v) for v in row) for row in cur.fetchall())


def long_session(connect, table):
    """SESSION_STEPS statements in a row on one autocommit connection (text queries,
    parameterized ones, errors with more statements after them, NULLs, multi-row results,
    writes and reads of them): "ok N", or the first step that answered otherwise."""
    conn = connect()
    try:
        conn.cursor().execute("create table %s (a int, b text)" % table)
        rows = nulls = 0
        for i in range(SESSION_STEPS):
            sql, params, want = session_step(i, table, rows, nulls)
            cur = conn.cursor()
            try:
                cur.execute(sql, params)
                got = cells(cur)
            except Exception as e:
                got = "error %s" % (getattr(e, "pgcode", None) or getattr(getattr(e, "diag", None), "sqlstate", None) or repr(e))
            if got != want:
                return "step %d %r: %s, want %s" % (i, sql, got, want)
            if i % 8 in (4, 7):
                rows += 1
                nulls += i % 8 == 7
        return "ok %d" % SESSION_STEPS
    finally:
        conn.close()


EDGE_TEXT = "O'Brien \"q\" C:\\temp\\new \u00fc\u20ac \U0001d11e\U0001f600 \u65e5\u672c\u8a9e\nend"
NULL_TYPES = ["int2", "int4", "int8", "float4", "float8", "numeric", "text", "varchar", "bool", "date", "time",
              "timestamp", "timestamptz", "interval", "bytea", "uuid", "json"]


def edges(q, table):
    """Values at the edges, through q(sql, params) -> rows: text beyond the BMP with quotes and
    backslashes both ways, 100 KB out and 200 KB in, a 2 MB result, NULL in every type, 100
    parameters with NULLs among them, and several statements in one simple query."""
    out = []
    r = q("select %s::text, '\u00fc\u20ac\U0001d11e\U0001f600\u65e5\u672c\u8a9e'", (EDGE_TEXT,))
    out.append("uni=%d" % (r[0][0] == EDGE_TEXT and r[0][1] == "\u00fc\u20ac\U0001d11e\U0001f600\u65e5\u672c\u8a9e"))
    r = q("select repeat('ab', 50000)", None)
    out.append("out=%d" % (len(r[0][0]) if r[0][0] == "ab" * 50000 else -1))
    r = q("select length(%s::text)", ("ab" * 100000,))
    out.append("in=%d" % r[0][0])
    r = q("select x, repeat('y', 100) from generate_series(0, 19999) as g(x) order by x", None)
    out.append("rows=%d,%d" % (len(r), sum(row[0] for row in r if row[1] == "y" * 100)))
    r = q("select " + ", ".join("null::%s" % t for t in NULL_TYPES), None)
    out.append("nulls=%d" % sum(v is None for v in r[0]))
    vals = [None if i % 3 == 0 else "v%d" % i for i in range(100)]
    r = q("select " + ", ".join(["%s::text"] * len(vals)), vals)
    out.append("params=%d" % (len(vals) if list(r[0]) == vals else -1))
    q("create table {0} (a int); insert into {0} values (1); insert into {0} values (2)".format(table), None)
    out.append("multi=%d" % q("select count(*) from %s" % table, None)[0][0])
    return " ".join(out)


# The session's own row of pg_stat_activity: its pid the one the driver holds, one row, a
# backend_start, its state and type.
ACTIVITY = ("select (pg_backend_pid() = %s)::text || ' ' || count(*)::text || ' ' || "
            "bool_and(backend_start is not null and backend_start <= now())::text || ' ' || min(state) || ' ' || "
            "min(backend_type) from pg_stat_activity where pid = pg_backend_pid()")


def writers(connect, table):
    """Two clients write one row: the second waits for the first's COMMIT and writes on what
    it committed (PostgreSQL's row lock): "the second's answer and the row after"."""
    import threading
    import time
    a, b = connect(), connect()
    try:
        ka, kb = a.cursor(), b.cursor()
        ka.execute("create table %s (id int primary key, n int)" % table)
        ka.execute("insert into %s values (1, 1)" % table)
        ka.execute("begin")
        ka.execute("update %s set n = n + 1 where id = 1" % table)
        second = []

        def write():
            try:
                kb.execute("update %s set n = n * 10 where id = 1" % table)
                second.append(str(kb.rowcount))
            except Exception as e:
                second.append("error %s" % (getattr(e, "pgcode", None) or getattr(getattr(e, "diag", None), "sqlstate", None)))
        th = threading.Thread(target=write)
        th.start()
        time.sleep(0.3)
        ka.execute("update %s set n = n + 2 where id = 1" % table)
        ka.execute("commit")
        th.join(60)
        ka.execute("select n from %s" % table)
        return "%s %s" % (second[0] if second else "waiting", ka.fetchone()[0])
    finally:
        a.close()
        b.close()


def psycopg2_cases():
    import psycopg2
    import psycopg2.extensions

    conn = psycopg2.connect(dsn)  # not autocommit: every statement runs in a transaction
    cur = conn.cursor()
    cur.execute("create table %s (a int, b text)" % table)
    conn.commit()

    def rollback():
        cur.execute("insert into %s values (1, 'x')" % table)
        conn.rollback()
        cur.execute("select count(*) from %s" % table)
        return cur.fetchone()[0]

    def copy_in():
        cur.copy_expert("copy %s from stdin" % table, io.StringIO("1\ta\n2\tb\n3\t\\N\n"))
        conn.commit()
        cur.execute("select count(*), count(b) from %s" % table)
        return cur.fetchone()

    def copy_out():
        buf = io.StringIO()
        cur.copy_expert("copy (select a, b from %s order by a) to stdout" % table, buf)
        conn.commit()
        return repr(buf.getvalue())

    def notice():
        cur.execute("do $$ begin raise notice 'hello %', 42; end $$")
        conn.commit()
        return conn.notices[-1].strip()

    def bytea():
        cur.execute("select %s::bytea", (psycopg2.Binary(b"\x01\x00\xff"),))
        v = bytes(cur.fetchone()[0])
        conn.commit()
        return v.hex()

    def named_cursor():
        c = conn.cursor("fetcher")
        c.itersize = 100
        c.execute("select x from generate_series(1, 250) as g(x)")
        s = sum(r[0] for r in c)
        c.close()
        conn.commit()
        return s

    def with_hold():
        c = conn.cursor("holder", withhold=True)
        c.execute("select x from generate_series(1, 10) as g(x)")
        conn.commit()
        s = sum(r[0] for r in c.fetchall())
        c.close()
        return s

    def cursors():
        """Named cursors as psycopg2 drives them (DECLARE, FETCH FORWARD n, MOVE, CLOSE): over
        more rows than DuckDB streams at once with a statement between fetches, scrolled forward,
        and a missing one."""
        out = []
        c = conn.cursor("big")
        c.itersize = 700
        c.execute("select x, 'r' || x as s from generate_series(1, %s) as g(x) order by x", (5000,))
        n = total = 0
        for row in c:
            n, total = n + 1, total + row[0]
            if n % 1000 == 0:
                cur.execute("select 1")
                cur.fetchone()
        c.close()
        out.append("%d/%d" % (n, total))
        c = conn.cursor("sc")
        c.execute("select x from generate_series(1, 100) as g(x) order by x")
        a = c.fetchmany(3)
        c.scroll(10)
        b = c.fetchone()
        c.scroll(50, mode="absolute")
        d = c.fetchone()
        rest = c.fetchall()
        c.close()
        out.append("%s %s %s %d" % ([r[0] for r in a], b[0], d[0], len(rest)))
        conn.commit()
        try:
            cur.execute('fetch 1 from "nope"')
        except psycopg2.Error as e:
            out.append(e.pgcode)
        conn.rollback()
        return " ".join(out)

    def session_set():
        conn.autocommit = True
        try:
            cur.execute("set search_path to pg_catalog, public")
            cur.execute("show search_path")
            return cur.fetchone()[0]
        finally:
            conn.autocommit = False

    def notify():
        listener = psycopg2.connect(dsn)
        listener.autocommit = True
        lc = listener.cursor()
        try:
            lc.execute("listen qf_channel")
            other = psycopg2.connect(dsn)
            other.autocommit = True
            other.cursor().execute("notify qf_channel, 'ping'")
            other.close()
            for _ in range(50):
                if listener.notifies:
                    break
                select.select([listener], [], [], 0.1)
                listener.poll()
            return listener.notifies[0].payload if listener.notifies else "none"
        finally:
            listener.close()

    def options():
        c = psycopg2.connect(dsn, options="-c statement_timeout=1234")
        try:
            k = c.cursor()
            k.execute("show statement_timeout")
            return k.fetchone()[0]
        finally:
            c.close()

    def recover():
        try:
            cur.execute("select 1/0")
        except psycopg2.Error:
            conn.rollback()
        cur.execute("select 7")
        v = cur.fetchone()[0]
        conn.commit()
        return v

    def session():
        def connect():
            c = psycopg2.connect(dsn)
            c.autocommit = True
            return c
        return long_session(connect, table + "_s")

    def edge_values():
        def q(sql, params):
            cur.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []
        try:
            return edges(q, table + "_e")
        finally:
            conn.commit()

    def semantics():
        cur.execute(SEMANTICS)
        row = cur.fetchone()
        conn.commit()
        return " ".join(row)

    def div_zero():
        cur.execute("select 1/0")
        return cur.fetchone()[0]

    def activity():
        cur.execute(ACTIVITY, (conn.get_backend_pid(),))
        v = cur.fetchone()[0]
        conn.commit()
        return v

    def writers_case():
        def connect():
            c = psycopg2.connect(dsn)
            c.autocommit = True
            return c
        return writers(connect, table + "_w")

    def nested():
        def execute(sql):
            cur.execute(sql)
            return "ok" if cur.description is None else str(cur.fetchone()[0])
        return nested_tx(execute, conn.commit, conn.rollback, table + "_n")

    for name, fn in [("semantics", semantics), ("div_zero", div_zero), ("nested_tx", nested),
                     ("rollback", rollback), ("copy_in", copy_in), ("copy_out", copy_out), ("notice", notice),
                     ("bytea", bytea), ("named_cursor", named_cursor), ("with_hold", with_hold), ("cursors", cursors),
                     ("edges", edge_values),
                     ("session_set", session_set), ("notify", notify), ("options", options), ("recover", recover),
                     ("activity", activity), ("writers", writers_case), ("long_session", session)]:
        case(name, fn)
        if conn.status != psycopg2.extensions.STATUS_READY:
            conn.rollback()


def psycopg3_cases():
    import psycopg

    conn = psycopg.connect(dsn)
    conn.execute("create table %s (a int, b text)" % table)
    conn.commit()
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))

    def rollback():
        conn.execute("insert into %s values (1, 'x')" % table)
        conn.rollback()
        return conn.execute("select count(*) from %s" % table).fetchone()[0]

    def copy_in():
        with conn.cursor() as cur:
            with cur.copy("copy %s (a, b) from stdin" % table) as cp:
                for row in [(1, "a"), (2, "b"), (3, None)]:
                    cp.write_row(row)
        conn.commit()
        return conn.execute("select count(*), count(b) from %s" % table).fetchone()

    def copy_out():
        rows = []
        with conn.cursor() as cur:
            with cur.copy("copy (select a, b from %s order by a) to stdout" % table) as cp:
                for row in cp.rows():
                    rows.append(row)
        conn.commit()
        return rows

    def notice():
        conn.execute("do $$ begin raise notice 'hello %', 42; end $$")
        conn.commit()
        return notices[-1]

    def bytea():
        v = conn.execute("select %b::bytea", (b"\x01\x00\xff",)).fetchone()[0]
        conn.commit()
        return bytes(v).hex()

    def prepared():
        total = 0
        for i in range(6):
            total += conn.execute("select %s::int + 1", (i,), prepare=True).fetchone()[0]
        conn.commit()
        return total

    def pipeline():
        with conn.pipeline():
            c1 = conn.execute("select 1")
            c2 = conn.execute("select %s::text", ("two",))
            c3 = conn.execute("select count(*) from %s" % table)
        out = [c1.fetchone()[0], c2.fetchone()[0], c3.fetchone()[0]]
        conn.commit()
        return out

    def named_cursor():
        with conn.cursor("fetcher") as c:
            c.itersize = 100
            c.execute("select x from generate_series(1, 250) as g(x)")
            s = sum(r[0] for r in c)
        conn.commit()
        return s

    def cursors():
        """Named cursors as psycopg 3 drives them (DECLARE with parameters through the extended
        protocol, a Describe of the cursor's portal, FETCH FORWARD n, MOVE, CLOSE): over more rows
        than DuckDB streams at once with a statement between fetches, binary, scrolled forward, and
        a missing one."""
        out = []
        with conn.cursor("big") as c:
            c.itersize = 700
            c.execute("select x, 'r' || x as s from generate_series(1, %s) as g(x) order by x", (5000,))
            n = total = 0
            for row in c:
                n, total = n + 1, total + row[0]
                if n % 1000 == 0:
                    conn.execute("select 1").fetchone()
        out.append("%d/%d" % (n, total))
        with conn.cursor("bin", binary=True) as c:
            c.execute("select x::int4, x::text from generate_series(1, 100) as g(x) order by g.x")
            a = c.fetchmany(3)
            c.scroll(10)
            b = c.fetchone()
            c.scroll(50, mode="absolute")
            d = c.fetchone()
            rest = c.fetchall()
        out.append("%s %s %s %d" % ([r[0] for r in a], b[0], d[0], len(rest)))
        conn.commit()
        try:
            conn.execute('fetch 1 from "nope"')
        except psycopg.Error as e:
            out.append(e.sqlstate)
        conn.rollback()
        return " ".join(out)

    def cursor_hold():
        """A WITH HOLD cursor read on after the transaction that declared it commits."""
        c = conn.cursor("held", withhold=True)
        c.execute("select x from generate_series(1, 3000) as g(x)")
        first = c.fetchmany(10)
        conn.commit()
        rest = c.fetchall()
        c.close()
        conn.commit()
        return "%d %d" % (len(first) + len(rest), sum(r[0] for r in first + rest))

    def notify():
        listener = psycopg.connect(dsn, autocommit=True)
        try:
            listener.execute("listen qf_channel")
            with psycopg.connect(dsn, autocommit=True) as other:
                other.execute("notify qf_channel, 'ping'")
            for n in listener.notifies():
                return n.payload
        finally:
            listener.close()

    def options():
        with psycopg.connect(dsn, options="-c statement_timeout=1234") as c:
            return c.execute("show statement_timeout").fetchone()[0]

    def names():  # result columns as PostgreSQL names them: what dict rows are keyed by
        cur = conn.execute("select count(*), 40 + 2, lower('A'), 1::text, max(a) as top from %s" % table)
        return " ".join(d.name for d in cur.description)

    def rollback_prepared():  # after a rollback psycopg 3 deallocates its statements (DEALLOCATE ALL)
        conn.execute("select %s::int + 1", (1,), prepare=True)
        conn.commit()
        conn.execute("select 1")
        conn.rollback()
        v = conn.execute("select %s::int + 1", (1,), prepare=True).fetchone()[0]
        conn.commit()
        return v

    def session():
        return long_session(lambda: psycopg.connect(dsn, autocommit=True), table + "_s")

    def edge_values():
        def q(sql, params):
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []
        try:
            return edges(q, table + "_e")
        finally:
            conn.commit()

    def semantics():
        row = conn.execute(SEMANTICS).fetchone()
        conn.commit()
        return " ".join(row)

    def div_zero():
        return conn.execute("select 1/0").fetchone()[0]

    def activity():
        v = conn.execute(ACTIVITY, (conn.info.backend_pid,)).fetchone()[0]
        conn.commit()
        return v

    def writers_case():
        return writers(lambda: psycopg.connect(dsn, autocommit=True), table + "_w")

    def nested():
        def execute(sql):
            cur = conn.execute(sql)
            return "ok" if cur.description is None else str(cur.fetchone()[0])
        return nested_tx(execute, conn.commit, conn.rollback, table + "_n")

    for name, fn in [("semantics", semantics), ("div_zero", div_zero), ("nested_tx", nested),
                     ("rollback", rollback), ("copy_in", copy_in), ("copy_out", copy_out), ("notice", notice),
                     ("bytea", bytea), ("prepared", prepared), ("pipeline", pipeline), ("edges", edge_values),
                     ("named_cursor", named_cursor), ("cursors", cursors), ("cursor_hold", cursor_hold),
                     ("notify", notify), ("options", options), ("names", names),
                     ("rollback_prepared", rollback_prepared), ("activity", activity), ("writers", writers_case),
                     ("long_session", session)]:
        case(name, fn)
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()


{"psycopg2": psycopg2_cases, "psycopg3": psycopg3_cases}[lib]()

# A session's settings as psycopg (3) reads them: SHOW TimeZone after SET, current_setting of
# statement_timeout (a startup option), and a transaction's SET LOCAL of both, by SHOW, by
# current_setting in a prepared statement, by the zone psycopg reads timestamptz values in (the
# TimeZone the server reported), and after the COMMIT. The zone reported at login is written
# <login> (servers' defaults differ). Prints "case NAME: RESULT" lines (pgclienttest.Results).
import sys

import psycopg

host, port, user, db = sys.argv[1:5]

def case(name, fn):
    try:
        result = fn()
    except Exception as e:  # the error's first line is the result
        result = "error " + str(e).splitlines()[0]
    print(f"case {name}: {result}", flush=True)

with psycopg.connect(host=host, port=port, user=user, dbname=db, autocommit=True,
                     options="-c statement_timeout=1234") as c:
    login = c.info.parameter_status("TimeZone")
    shown = lambda v: "<login>" if str(v) == login else str(v)
    one = lambda sql, prepare=None: shown(c.execute(sql, prepare=prepare).fetchone()[0])
    reported = lambda: shown(c.info.parameter_status("TimeZone"))
    read_in = lambda: shown(c.execute("select '2024-01-02 03:04:05+00'::timestamptz").fetchone()[0].tzinfo)

    def after_set():
        c.execute("set time zone 'GMT'")
        return [one("show TimeZone"), one("select current_setting('TimeZone')", True), reported(), read_in()]

    def set_local():
        out = []
        with c.transaction():
            c.execute("set local time zone 'Zulu'")
            c.execute("set local statement_timeout = '1500'")
            out += [one("show timezone"), one("select current_setting('TimeZone')", True), reported(), read_in(),
                    one("show statement_timeout"), one("select current_setting('statement_timeout')", True)]
        return out + [one("show timezone"), reported(), read_in(), one("select current_setting('statement_timeout')", True)]

    def reset():
        c.execute("reset timezone")
        return [one("show timezone"), reported()]

    case("after_set", after_set)
    case("statement_timeout", lambda: [one("select current_setting('statement_timeout')"), one("show statement_timeout")])
    case("set_local", set_local)
    case("reset", reset)

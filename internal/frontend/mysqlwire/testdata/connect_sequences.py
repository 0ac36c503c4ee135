# What an application's first minute through a library looks like: connect with the library's
# defaults, a query with a parameter, the column descriptions it reads, a transaction, and the
# reflection an ORM does at startup. argv: library (pymysql, mysqldb, sqlalchemy, sqlalchemy-mysqldb,
# django) host port user password db. Prints one line per step, "step: value" or "step: error N".
import decimal
import json
import sys

lib, host, port, user, password, db = sys.argv[1:7]
port = int(port)


def show(step, f):
    try:
        v = f()
    except Exception as e:  # the error's number is what a client branches on
        code = e.args[0] if e.args and isinstance(e.args[0], int) else None
        orig = getattr(e, "orig", None)
        if code is None and orig is not None and orig.args and isinstance(orig.args[0], int):
            code = orig.args[0]
        v = "error %s %s" % (code, type(e).__name__ if code is None else "")
    print("%s: %s" % (step, json.dumps(v, default=repr, sort_keys=True)))


QUERY = ("select 1 as one, 1+1 as two, 7/2 as half, 1.5 as d, 'abc' as s, cast(7 as signed) as si, "
         "null as n, id, name, price, ok, born from cs_t where id = %s")


def dbapi(conn):
    cur = conn.cursor()
    show("execute", lambda: cur.execute(QUERY, (1,)))
    show("description", lambda: [(d[0], d[1]) for d in cur.description])
    show("row", lambda: [(type(v).__name__, str(v)) for v in cur.fetchone()])
    show("insert", lambda: cur.execute("insert into cs_t (name, price, ok, born) values (%s, %s, %s, %s)", ("y", decimal.Decimal("2.50"), True, "2020-02-29")))
    show("lastrowid", lambda: cur.lastrowid)
    show("rollback", lambda: conn.rollback())
    show("count after rollback", lambda: (cur.execute("select count(*) from cs_t"), cur.fetchone()[0])[1])
    show("executemany", lambda: cur.executemany("insert into cs_t (name, ok) values (%s, %s)", [("a", False), ("b", None)]))
    show("commit", lambda: conn.commit())
    show("names", lambda: (cur.execute("select name from cs_t order by id"), [r[0] for r in cur.fetchall()])[1])
    show("autocommit", lambda: conn.get_autocommit())
    show("missing table", lambda: cur.execute("select * from no_such_t"))
    show("after error", lambda: (cur.execute("select %s + 1", (41,)), cur.fetchone()[0])[1])


if lib == "pymysql":
    import pymysql
    c = pymysql.connect(host=host, port=port, user=user, password=password, database=db)
    dbapi(c)
elif lib == "mysqldb":
    import MySQLdb
    c = MySQLdb.connect(host=host, port=port, user=user, passwd=password, db=db)
    dbapi(c)
elif lib.startswith("sqlalchemy"):
    import sqlalchemy
    from sqlalchemy import text
    driver = "mysqldb" if lib == "sqlalchemy-mysqldb" else "pymysql"
    engine = sqlalchemy.create_engine(f"mysql+{driver}://{user}:{password}@{host}:{port}/{db}")
    with engine.connect() as conn:
        show("scalar", lambda: conn.execute(text("select :a + 1"), {"a": 1}).scalar())
        show("row", lambda: [str(v) for v in conn.execute(text("select id, name, price, ok, born from cs_t where id = :i"), {"i": 1}).one()])
    with engine.begin() as conn:
        show("insert", lambda: conn.execute(text("insert into cs_t (name) values (:n)"), {"n": "sa"}).lastrowid is not None)
    insp = sqlalchemy.inspect(engine)
    show("default schema", lambda: insp.default_schema_name == db)
    show("tables", lambda: insp.get_table_names())
    show("columns", lambda: [[c["name"], str(c["type"]), c["nullable"], c.get("default"), c.get("autoincrement")] for c in insp.get_columns("cs_t")])
    show("pk", lambda: insp.get_pk_constraint("cs_t")["constrained_columns"])
    show("indexes", lambda: sorted([[i["name"], i["column_names"], bool(i["unique"])] for i in insp.get_indexes("cs_t")]))
    show("unique", lambda: sorted([[u["name"], u["column_names"]] for u in insp.get_unique_constraints("cs_t")]))
    show("fks", lambda: [[f["constrained_columns"], f["referred_table"], f["referred_columns"]] for f in insp.get_foreign_keys("cs_child")])
    show("dialect", lambda: [engine.dialect._server_ansiquotes, engine.dialect.supports_sane_rowcount, engine.dialect._is_mariadb])
elif lib == "django":
    import django
    from django.conf import settings
    settings.configure(DATABASES={"default": {"ENGINE": "django.db.backends.mysql", "HOST": host, "PORT": port,
                                              "USER": user, "PASSWORD": password, "NAME": db}}, USE_TZ=False)
    django.setup()
    from django.db import connection
    show("connect", lambda: connection.ensure_connection())
    show("mysql_is_mariadb", lambda: connection.mysql_is_mariadb)
    show("sql_mode", lambda: sorted(connection.sql_mode))
    show("isolation", lambda: connection.isolation_level)
    show("auto is null", lambda: connection.features.is_sql_auto_is_null_enabled)
    show("storage engine", lambda: connection.features._mysql_storage_engine)
    with connection.cursor() as cur:
        intro = connection.introspection
        show("tables", lambda: sorted(intro.table_names(cur)))
        show("description", lambda: [[d.name, d.type_code, d.null_ok] for d in intro.get_table_description(cur, "cs_t")])
        show("field types", lambda: [intro.get_field_type(d.type_code, d) for d in intro.get_table_description(cur, "cs_t")])
        show("relations", lambda: intro.get_relations(cur, "cs_child"))
        show("pk", lambda: intro.get_primary_key_column(cur, "cs_t"))
        show("sequences", lambda: intro.get_sequences(cur, "cs_t"))
        show("constraints", lambda: sorted((k if not k.startswith("cs_") else "named", v["columns"], v["primary_key"], v["unique"], bool(v["foreign_key"]), v["index"]) for k, v in intro.get_constraints(cur, "cs_t").items()))
        show("query", lambda: (cur.execute("select name from cs_t where id = %s", [1]), cur.fetchone())[1])

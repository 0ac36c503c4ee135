# What SQLAlchemy and tools read of the server at connect, through psycopg2: the version they
# parse out of version(), SHOW of settings, current_setting, and the column names they key by.
# Prints "case NAME: RESULT" lines (pgclienttest.Results reads them).
import sys
import warnings

import sqlalchemy as sa

warnings.simplefilter("ignore")
host, port, user, db = sys.argv[1:5]

def case(name, fn):
    try:
        result = fn()
    except Exception as e:  # the error's first line is the result
        result = "error " + str(e).splitlines()[0]
    print(f"case {name}: {result}", flush=True)

engine = sa.create_engine(f"postgresql+psycopg2://{user}@{host}:{port}/{db}")
with engine.connect() as c:
    q = lambda sql: c.execute(sa.text(sql))
    case("server_version_info", lambda: c.dialect.server_version_info)
    case("version", lambda: list(q("select version()").mappings().one().keys()) + [q("select pg_catalog.version()").scalar().startswith("PostgreSQL ")])
    case("isolation", lambda: q("show transaction isolation level").scalar())
    case("show", lambda: [q("show " + n).scalar() for n in ["standard_conforming_strings", "server_encoding", "search_path"]])
    case("current_setting", lambda: list(q("select current_setting('server_version_num')::int >= 90000 as v, current_setting('max_identifier_length')").one()))
    case("has_table", lambda: sa.inspect(c).has_table("orders"))

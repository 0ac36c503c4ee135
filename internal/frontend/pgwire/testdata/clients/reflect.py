# SQLAlchemy (psycopg2) reflects two tables as ORMs, migrations and admin tools do: columns,
# primary key, indexes, foreign keys, unique constraints, and a whole Table. Prints "case NAME:
# RESULT" lines; the test runs it on PostgreSQL and on DuckDB and compares them.
#
# usage: python3 reflect.py HOST PORT USER DATABASE
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
    c = c.execution_options(isolation_level="AUTOCOMMIT")
    for s in ["create table sa_parent (id integer primary key, code varchar(20) unique not null, n numeric(10,2) default 0, note text)",
              "create index sa_parent_n on sa_parent (n, note)",
              "create table sa_child (a integer, b integer, pid integer references sa_parent (id), "
              "pcode varchar(20) references sa_parent (code), primary key (b, a))"]:
        c.execute(sa.text(s))
    i = sa.inspect(c)
    case("table_names", lambda: sorted(n for n in i.get_table_names() if n.startswith("sa_")))
    for t in ["sa_parent", "sa_child"]:
        case(t + " columns", lambda: [(d["name"], str(d["type"]), d["nullable"], d["default"]) for d in i.get_columns(t)])
        case(t + " pk", lambda: i.get_pk_constraint(t))
        case(t + " indexes", lambda: sorted((d["name"], d["column_names"], d["unique"]) for d in i.get_indexes(t)))
        case(t + " fks", lambda: sorted((d["name"], d["constrained_columns"], d["referred_table"], d["referred_columns"]) for d in i.get_foreign_keys(t)))
        case(t + " unique", lambda: sorted((d["name"], d["column_names"]) for d in i.get_unique_constraints(t)))
    case("table", lambda: [(col.name, col.primary_key, sorted(fk.target_fullname for fk in col.foreign_keys))
                           for col in sa.Table("sa_child", sa.MetaData(), autoload_with=c).columns])

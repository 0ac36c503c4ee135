# SQLAlchemy (with PyMySQL) reflecting the keys of tables made beforehand, as an ORM's
# autoload_with and Alembic's autogenerate read them (SHOW CREATE TABLE): primary key, unique
# constraints, indexes, foreign keys, then SHOW CREATE TABLE itself. One line per fact; the
# Go test compares them with MariaDB's.
import json
import os
import sys

import sqlalchemy as sa

url = "mysql+pymysql://{}:{}@{}:{}/{}".format(os.environ["MYSQL_USER"], os.environ["MYSQL_PASSWORD"],
                                             os.environ["MYSQL_HOST"], os.environ["MYSQL_PORT"], os.environ["MYSQL_DB"])
eng = sa.create_engine(url)
insp = sa.inspect(eng)
dump = lambda v: json.dumps(v, sort_keys=True)
for t in sys.argv[1:]:
    print(t, "pk", insp.get_pk_constraint(t)["constrained_columns"])
    print(t, "unique", dump(sorted(insp.get_unique_constraints(t), key=lambda u: u["name"])))
    print(t, "indexes", dump(sorted(insp.get_indexes(t), key=lambda i: i["name"])))
    print(t, "fk", dump(sorted(insp.get_foreign_keys(t), key=lambda f: f["name"])))
md = sa.MetaData()
tables = [sa.Table(t, md, autoload_with=eng) for t in sys.argv[1:]]
for table in tables:
    print(table.name, "table indexes", sorted((i.name, [c.name for c in i.columns], i.unique) for i in table.indexes))
    print(table.name, "table fks", sorted((f.name, [c.name for c in f.columns], f.referred_table.name) for f in table.foreign_key_constraints))
with eng.connect() as c:
    for t in sys.argv[1:]:
        for line in c.execute(sa.text("SHOW CREATE TABLE `%s`" % t)).fetchone()[1].splitlines():
            print("show", line)

# SQLAlchemy (with PyMySQL) on a fresh database, as an application starts: metadata.create_all
# (CREATE TABLE with a foreign key and an ON UPDATE CURRENT_TIMESTAMP column, CREATE INDEX for index=True, server defaults of the current
# time and of a boolean), rows inserted, then reflection as Alembic's autogenerate and
# MetaData.reflect read a table back (SHOW CREATE TABLE: keys, indexes, foreign keys, defaults)
# and SHOW CREATE TABLE itself. Prints one line per fact; the Go test compares them with MariaDB's.
import json
import os

import sqlalchemy as sa

url = "mysql+pymysql://{}:{}@{}:{}/{}".format(os.environ["MYSQL_USER"], os.environ["MYSQL_PASSWORD"],
                                             os.environ["MYSQL_HOST"], os.environ["MYSQL_PORT"], os.environ["MYSQL_DB"])
eng = sa.create_engine(url)
md = sa.MetaData()
users = sa.Table("sa_users", md,
                 sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("email", sa.String(100), nullable=False, unique=True),
                 sa.Column("name", sa.String(50), index=True),
                 sa.Column("created", sa.DateTime, server_default=sa.func.now()),
                 sa.Column("active", sa.Boolean, server_default=sa.true()),
                 # SQLAlchemy's documented spelling of MySQL's auto-updated column
                 sa.Column("updated", sa.DateTime, server_default=sa.text("CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP")))
orders = sa.Table("sa_orders", md,
                  sa.Column("id", sa.Integer, primary_key=True),
                  sa.Column("user_id", sa.Integer, sa.ForeignKey("sa_users.id"), nullable=False, index=True),
                  sa.Column("placed", sa.DateTime, server_default=sa.func.now(), nullable=False),
                  sa.Column("paid", sa.Boolean, server_default=sa.false()),
                  sa.Column("total", sa.Numeric(10, 2)))
md.create_all(eng)
with eng.begin() as c:
    c.execute(users.insert(), [{"email": "a@x", "name": "a"}, {"email": "b@x", "name": "b"}])
    r = c.execute(orders.insert(), {"user_id": 2, "total": 9.5})
    print("inserted", r.inserted_primary_key)
    c.execute(orders.insert(), {"user_id": 1})
    print("defaults", c.execute(sa.select(orders.c.paid, orders.c.placed.isnot(None)).order_by(orders.c.id)).fetchall())

insp = sa.inspect(eng)
for t in ["sa_users", "sa_orders"]:
    # the ON UPDATE clause is not kept on DuckDB (the column is created, and not set by UPDATE):
    # its default is compared up to it
    print(t, "columns", [[c["name"], c["nullable"], str(c.get("default")).replace(" ON UPDATE current_timestamp()", "")]
                         for c in insp.get_columns(t)])
    print(t, "pk", insp.get_pk_constraint(t)["constrained_columns"])
    print(t, "fk", json.dumps(insp.get_foreign_keys(t), sort_keys=True))
    print(t, "indexes", json.dumps(sorted(insp.get_indexes(t), key=lambda i: i["name"]), sort_keys=True))
md2 = sa.MetaData()
md2.reflect(eng, only=["sa_users", "sa_orders"])
print("reflected", sorted(md2.tables), [str(fk.column) for fk in md2.tables["sa_orders"].foreign_keys])
with eng.connect() as c:
    for line in c.execute(sa.text("SHOW CREATE TABLE sa_orders")).fetchone()[1].splitlines():
        print("show", line)

# What an ORM does with AUTO_INCREMENT, through SQLAlchemy's ORM and PyMySQL: create the
# tables (SQLAlchemy's DDL, and mysqldump's with table options, KEY, UNSIGNED, display widths),
# insert rows without their ids and read the ids back (the OK packet's insert id, as
# lastrowid, and LAST_INSERT_ID()), then read the rows. Prints one JSON object.
import json
import sys

import pymysql
import sqlalchemy as sa
from sqlalchemy.orm import Session, declarative_base

host, port, user, db = sys.argv[1:5]
engine = sa.create_engine(f"mysql+pymysql://{user}@{host}:{port}/{db}")
Base = declarative_base()


class Item(Base):
    __tablename__ = "orm_items"
    __table_args__ = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(50), nullable=False)


Base.metadata.create_all(engine)
out = {}
with Session(engine) as s:
    a, b = Item(name="a"), Item(name="b")
    s.add(a)
    s.flush()
    s.add(b)
    s.flush()
    out["orm_ids"] = [a.id, b.id]
    s.commit()
with Session(engine) as s:
    out["orm_read"] = [[i.id, i.name] for i in s.query(Item).order_by(Item.id)]

conn = pymysql.connect(host=host, port=int(port), user=user, database=db, autocommit=True)
cur = conn.cursor()
cur.execute("CREATE TABLE `raw_t` (`id` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, `v` INT(11) DEFAULT NULL COMMENT 'a value', "
            "`s` VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT 'x', `code` CHAR(4), PRIMARY KEY (`id`), "
            "KEY `v_idx` (`v`), UNIQUE KEY `code_u` (`code`)) ENGINE=InnoDB AUTO_INCREMENT=100 DEFAULT CHARSET=utf8mb4")
cur.execute("INSERT INTO raw_t (v) VALUES (%s), (%s)", (1, 2))
out["raw_lastrowid"], out["raw_rowcount"] = cur.lastrowid, cur.rowcount
cur.execute("SELECT LAST_INSERT_ID()")
out["last_insert_id"] = cur.fetchone()[0]
cur.execute("INSERT INTO `raw_t` (`v`, `s`) VALUES (3, 'y')")
out["raw_lastrowid_2"] = cur.lastrowid
cur.execute("UPDATE raw_t SET v = v + 10 WHERE id = 100")
out["update_lastrowid"] = cur.lastrowid
cur.execute("SELECT LAST_INSERT_ID()")
out["last_insert_id_2"] = cur.fetchone()[0]
cur.execute("SELECT id, v, s FROM raw_t ORDER BY id")
out["raw_read"] = [list(r) for r in cur.fetchall()]
try:
    cur.execute("CREATE TABLE raw_t (id INT AUTO_INCREMENT PRIMARY KEY)")
    out["create_again"] = "ok"
except pymysql.err.MySQLError as e:
    out["create_again"] = e.args[0]
cur.execute("DROP TABLE raw_t")
cur.execute("CREATE TABLE raw_t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
cur.execute("INSERT INTO raw_t (v) VALUES (7)")
out["recreated_lastrowid"] = cur.lastrowid
print(json.dumps(out))

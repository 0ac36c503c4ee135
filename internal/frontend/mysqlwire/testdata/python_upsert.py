# Drives PyMySQL as applications upsert: INSERT ... ON DUPLICATE KEY UPDATE (VALUES(col) and
# the row's own columns), REPLACE INTO, each with explicit ids, then an INSERT that takes the
# next AUTO_INCREMENT id. Prints the table after each step.
# Usage: python3 python_upsert.py host port user db
import sys

import pymysql

host, port, user, db = sys.argv[1:5]
conn = pymysql.connect(host=host, port=int(port), user=user, password="", database=db, autocommit=True)
cur = conn.cursor()


def table(step):
    cur.execute("select id, n, s from up order by id")
    print(step, cur.fetchall())


cur.execute("create table up (id int not null auto_increment primary key, n int, s varchar(20))")
cur.executemany("insert into up (n, s) values (%s, %s)", [(1, "a"), (2, "b")])
table("inserted")
cur.execute("insert into up (id, n, s) values (1, 5, 'x'), (10, 1, 'new') "
            "on duplicate key update n = n + values(n), `s` = concat(s, values(`s`))")
table("upserted")
cur.execute("insert into up (id, n, s) values (%s, %s, %s) on duplicate key update n = 0", (2, 7, "y"))
table("upserted by parameters")
cur.execute("replace into up (id, n, s) values (2, 9, 'r'), (20, 3, 'z')")
table("replaced")
cur.execute("replace up values (20, 4, 'w')")
table("replaced without into")
cur.execute("insert into up (n, s) values (0, 'next')")
print("next id", cur.lastrowid)
table("after")
cur.execute("drop table up")
conn.close()

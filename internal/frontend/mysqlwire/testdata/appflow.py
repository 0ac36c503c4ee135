# An application's day through PyMySQL or mysqlclient (MySQLdb), as their ORMs' backends use
# them: a table with an AUTO_INCREMENT key, a UNIQUE name and DECIMAL, JSON, DATE and DATETIME
# columns; inserts reading lastrowid, an upsert on the unique name, REPLACE by the key,
# LAST_INSERT_ID(), a rolled-back and a committed transaction, aggregates, GROUP_CONCAT,
# DATE_FORMAT, DATEDIFF, LIKE, CAST AS SIGNED. Prints one line per step: its label and the
# rows (or affected rows and lastrowid), or the error's number.
# Usage: python3 appflow.py pymysql|mysqldb host port user password db
import sys, json, datetime, decimal
lib, host, port, user, password, db = sys.argv[1:7]
if lib == "pymysql":
    import pymysql as driver
    conn = driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=True)
else:
    import MySQLdb as driver
    conn = driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=True)
cur = conn.cursor()
def step(label, sql, params=None):
    try:
        n = cur.execute(sql, params)
        if cur.description is None:
            print(label, 'affected', n, 'lastrowid', cur.lastrowid)
        else:
            print(label, repr(cur.fetchall()))
    except driver.MySQLError as e:
        print(label, 'ERR', e.args[0])
step('drop', "drop table if exists app")
step('create', "create table app (id int not null auto_increment primary key, name varchar(40) not null unique, qty int default 0, "
     "price decimal(10,2), meta json, born date, seen datetime) engine=InnoDB default charset=utf8mb4")
step('insert', "insert into app (name, qty, price, meta, born, seen) values (%s, %s, %s, %s, %s, %s)",
     ('Apple', 1, decimal.Decimal('1.50'), json.dumps({'k': 1}), datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5)))
step('lastid', "select last_insert_id()")
step('many', "insert into app (name, qty, born) values ('banana', 2, '2024-01-05'), ('cherry', 3, '2024-02-01')")
step('upsert', "insert into app (name, qty) values ('Apple', 10) on duplicate key update qty = qty + values(qty)")
step('upsert-new', "insert into app (name, qty) values ('date', 4) on duplicate key update qty = values(qty)")
step('replace', "replace into app (id, name, qty) values (2, 'blueberry', 5)")
step('rows', "select id, name, qty, price, meta, born, seen from app order by id")
step('agg', "select count(*), sum(qty), avg(qty), max(price), min(born) from app")
step('group', "select qty > 3, count(*) from app group by qty > 3 order by 1")
step('concat', "select group_concat(name order by name desc separator '; ') from app")
step('concat-plain', "select group_concat(distinct qty) from app where qty < 3")
step('format', "select date_format(seen, '%Y-%m-%d %H:%i:%s'), date_format(born, '%d/%m/%Y') from app where id = 1")
step('datediff', "select name, datediff('2024-03-01', born) from app where born is not null order by id")
step('like', "select name from app where name like %s order by id", ('a%',))
step('notlike', "select name from app where name not like 'B%' order by id")
step('cast', "select cast(qty as signed), cast('12' as unsigned integer), cast(qty as char), convert(qty, signed) from app where id = 1")
step('update', "update app set qty = qty * %s where name = %s", (2, 'cherry'))
step('begin', "start transaction")
step('tx-insert', "insert into app (name) values ('fig')")
step('rollback', "rollback")
step('begin2', "begin")
step('tx-insert2', "insert into app (name) values ('grape')")
step('commit', "commit")
step('final', "select id, name, qty from app order by id")

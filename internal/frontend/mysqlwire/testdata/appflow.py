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
# An UPDATE counts the rows it changed (no CLIENT_FOUND_ROWS here), TRUNCATE none, and the
# AUTO_INCREMENT ids start again after it; the errors an application catches.
step('update-same', "update app set qty = qty where id = 1")
step('update-some', "update app set qty = 6 where name in ('Apple', 'cherry', 'date')")
step('update-param-same', "update app set price = %s, meta = meta where id = %s", (decimal.Decimal('1.50'), 1))
step('update-null', "update app set price = null where price is null")
step('duplicate', "insert into app (name) values ('Apple')")
step('syntax', "selec 1")
step('missing', "select * from no_such_table")
step('truncate', "truncate table app")
step('after-truncate', "insert into app (name) values ('kiwi'), ('lime')")
step('ids', "select id, name from app order by id")
# A type matrix: each type written by a parameter (as the driver escapes it) and read back.
step('matrix-create', "create table mx (id int primary key, ti tinyint, si smallint, i int, bi bigint, bu bigint unsigned, "
     "d decimal(12,4), f float, dbl double, b boolean, c char(5), s varchar(20), tx text, bl blob, dt date, tm time, "
     "ts datetime, j json)")
step('matrix-insert', "insert into mx values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
     (1, -128, -32768, -2147483648, -9223372036854775808, 18446744073709551615, decimal.Decimal('-12345678.1234'), 2.5,
      0.001, True, 'ab', "h\u00e9llo 'q' \\ \"d\"", 'long text', b"\x00\x01\xff'\\", datetime.date(2024, 2, 29),
      datetime.timedelta(hours=23, minutes=59, seconds=59), datetime.datetime(2024, 2, 29, 13, 14, 15),
      '{"a": [1, {"b": null}]}'))
step('matrix-max', "insert into mx values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
     (2, 127, 32767, 2147483647, 9223372036854775807, 0, decimal.Decimal('99999999.9999'), -0.125, -1e300, False, '',
      '', '', b'', datetime.date(1970, 1, 1), datetime.timedelta(0), datetime.datetime(1999, 12, 31, 23, 59, 59), '[]'))
step('matrix-nulls', "insert into mx (id) values (3)")
step('matrix', "select * from mx order by id")
step('matrix-where', "select id from mx where bl = %s or s = %s or dt = %s order by id",
     (b"\x00\x01\xff'\\", "h\u00e9llo 'q' \\ \"d\"", datetime.date(1970, 1, 1)))
# What applications write in MySQL's dialect: INSERT IGNORE, locking reads, UPDATE and DELETE
# with ORDER BY / LIMIT, DROP INDEX ... ON, and functions and operators DuckDB spells otherwise.
step('ignore', "insert ignore into app (name) values ('kiwi')")
step('ignore-new', "insert ignore into app (name) values ('mango')")
step('ignore-ids', "select id, name from app order by id")
step('for-update', "select id from app where name = %s for update", ('kiwi',))
step('share-mode', "select id from app where name = 'kiwi' lock in share mode")
step('update-limit', "update app set qty = 9 where qty = 0 order by id desc limit 1")
step('delete-limit', "delete from app where qty = 0 limit 1")
step('limited-rows', "select id, name, qty from app order by id")
step('index', "create index app_qty on app (qty)")
step('drop-index', "drop index app_qty on app")
step('dates', "select date_add('2024-02-29 10:00:00', interval 1 day), date_sub('2024-03-01', interval 2 hour), "
     "adddate('2024-01-31', interval 1 month), date_add(%s, interval 1 year), date_sub(%s, interval 90 minute)",
     (datetime.date(2024, 2, 29), datetime.date(2024, 2, 29)))
step('recent', "select count(*) from app where %s > date_sub(now(), interval 7 day)", (datetime.datetime(2000, 1, 1),))
step('functions', "select str_to_date('29/02/2024', '%%d/%%m/%%Y'), str_to_date('2024-02-29 13:14', '%%Y-%%m-%%d %%H:%%i'), "
     "timestampdiff(month, '2024-01-31', '2024-03-30'), to_days('2024-01-01'), substring_index('a.b.c', '.', 2), "
     "substring_index('a.b.c', '.', -1), json_unquote(json_extract('{\"a\": \"x\"}', '$.a'))")
step('operators', "select 10 div 3, -7 div 2, 10 mod 3, 'Abc' regexp 'b', 'Abc' not regexp '^x', truncate(1.999, 2)")
step('regexp', "select name from app where name rlike %s order by name", ('^[kl]',))
step('qualified-set', "update app a set a.qty = a.qty + 1 where a.name = 'lime'")
step('qualified-rows', "select name, qty from app where name = 'lime'")
# MySQL's semantics DuckDB's operators and functions have otherwise: / divides exactly (7/2 is
# 3.5, a DECIMAL on MariaDB, compared here), CONCAT is NULL with a NULL, LENGTH counts bytes,
# <=> is NULL-safe equality; MySQL's functions of a date's text, FIELD, ELT, INSERT, CONV, HEX.
step('semantics', "select 7/2 = 3.5, -7/2 = -3.5, 7 /-2 = -3.5, 100 * 3 / 7 > 42.85, 7/0 is null, concat('a', null), "
     "concat('a', 1, 'b'), length('\u00e9'), octet_length('\u00e9'), char_length('\u00e9'), null <=> null, 1 <=> null, 1 <=> 1")
step('semantics-params', "select %s / 2 = 3.5, concat(%s, null), concat(%s, %s), length(%s), %s <=> null, %s <=> 1",
     (7, 'a', 'a', 'b', '\u00e9', None, 1))
step('date-functions', "select year('2024-03-04'), dayofweek('2024-03-04'), weekday(%s), week('2024-01-07'), date_format('2024-03-04', '%%Y'), "
     "last_day('2024-02-04'), hour('2024-03-04 10:11:12'), year(%s), dayofweek(%s)",
     (datetime.date(2024, 3, 4), datetime.datetime(2024, 3, 9, 23, 59, 58), datetime.datetime(2024, 3, 9, 23, 59, 58)))
step('string-functions', "select field(%s, 'a', 'b'), elt(2, 'a', 'b'), insert('Quadratic', 3, 4, 'What'), conv('a', 16, 2), oct(12), "
     "hex(255), hex('abc'), length(now())", ('B',))
# What Django's MySQL backend sends for a model and its lookups: longtext, longblob, bool and
# datetime(6) columns, a unique constraint added by ALTER TABLE; contains and startswith as LIKE BINARY (by case), icontains as LIKE,
# regex as REGEXP BINARY, exact by case as COLLATE utf8mb4_bin; and a paginator's
# SQL_CALC_FOUND_ROWS with FOUND_ROWS().
step('django-create', "CREATE TABLE `blog_author` (`id` bigint AUTO_INCREMENT NOT NULL PRIMARY KEY, `name` varchar(100) NOT NULL, "
     "`active` bool NOT NULL, `bio` longtext NULL, `joined` datetime(6) NOT NULL, `avatar` longblob NULL, `note` tinytext NULL)")
step('django-insert', "INSERT INTO `blog_author` (`name`, `active`, `bio`, `joined`, `avatar`) VALUES (%s, %s, %s, %s, %s)",
     ('Ann', True, 'long ' * 20, datetime.datetime(2024, 3, 4, 10, 11, 12, 500000), b'\x00\x01'))
step('django-insert2', "INSERT INTO `blog_author` (`name`, `active`, `bio`, `joined`, `avatar`) VALUES (%s, %s, %s, %s, %s)",
     ('annette', False, None, datetime.datetime(2024, 3, 5, 0, 0, 0), None))
step('django-unique', "ALTER TABLE `blog_author` ADD CONSTRAINT `blog_author_name_uniq` UNIQUE (`name`)")
step('django-duplicate', "INSERT INTO `blog_author` (`name`, `active`, `joined`) VALUES (%s, %s, %s)", ('Ann', True, datetime.datetime(2024, 3, 6)))
step('django-contains', "SELECT `blog_author`.`id`, `blog_author`.`name` FROM `blog_author` WHERE `blog_author`.`name` LIKE BINARY %s "
     "ORDER BY `blog_author`.`id` ASC LIMIT 21", ('A%',))
step('django-icontains', "SELECT `blog_author`.`id` FROM `blog_author` WHERE `blog_author`.`name` LIKE %s ORDER BY `blog_author`.`id` ASC", ('%NN%',))
step('django-regex', "SELECT `blog_author`.`id` FROM `blog_author` WHERE `blog_author`.`name` REGEXP BINARY %s ORDER BY `blog_author`.`id` ASC", ('^a',))
step('django-iregex', "SELECT `blog_author`.`id` FROM `blog_author` WHERE `blog_author`.`name` REGEXP %s ORDER BY `blog_author`.`id` ASC", ('^a',))
step('django-exact', "SELECT `blog_author`.`id` FROM `blog_author` WHERE `blog_author`.`name` = %s COLLATE utf8mb4_bin", ('ann',))
step('django-rows', "SELECT * FROM `blog_author` ORDER BY `id`")
step('django-page', "SELECT SQL_CALC_FOUND_ROWS `id`, `name` FROM `blog_author` ORDER BY `id` LIMIT %s, %s", (1, 1))
step('django-found', "SELECT FOUND_ROWS()")

# What a PyMySQL or mysqlclient (MySQLdb) user sees of the capability flags that change what
# MariaDB does for a session: two connections at once, with and without CLIENT_FOUND_ROWS and
# CLIENT_IGNORE_SPACE, their statements in turn (a proxy must never run one on a connection of
# the other's flags), then stacked statements and LOAD DATA LOCAL INFILE with and without their
# flags. Prints one line per step: the step, then affected rows, rows or the error's number.
# Usage: python3 python_flags.py pymysql|mysqldb host port user password db infile
import sys

lib, host, port, user, password, db, infile = sys.argv[1:8]
if lib == "pymysql":
    import pymysql as driver
    from pymysql.constants import CLIENT

    def connect(flags, local=False):
        return driver.connect(host=host, port=int(port), user=user, password=password, database=db, autocommit=True, client_flag=flags, local_infile=local)
else:
    import MySQLdb as driver
    from MySQLdb.constants import CLIENT

    def connect(flags, local=False):
        return driver.connect(host=host, port=int(port), user=user, passwd=password, db=db, autocommit=True, client_flag=flags, local_infile=local)


def step(name, conn, sql):
    cur = conn.cursor()
    try:
        n = cur.execute(sql)
        out = "affected %d" % n if cur.description is None else repr([tuple(str(v) for v in r) for r in cur.fetchall()])
        while cur.nextset():
            out += " | " + repr([tuple(str(v) for v in r) for r in cur.fetchall()])
    except driver.MySQLError as e:
        out = "error %d" % e.args[0]
    print("%s: %s" % (name, out))


found = connect(CLIENT.FOUND_ROWS | CLIENT.IGNORE_SPACE)
plain = connect(0)
step("create", plain, "create table flags_t (id int primary key, v int)")
step("insert", plain, "insert into flags_t values (1, 1), (2, 2)")
for i in range(3):
    step("found rows update %d" % i, found, "update flags_t set v = v")
    step("plain update %d" % i, plain, "update flags_t set v = v")
    step("found rows update changing one %d" % i, found, "update flags_t set v = 2 where id <= 2")
    step("ignore space %d" % i, found, "select count (*) from flags_t")
    step("no ignore space %d" % i, plain, "select count (*) from flags_t")
step("multi without", plain, "select 1; select 2")
step("multi with", connect(CLIENT.MULTI_STATEMENTS), "select 1; select 2")
step("create load", plain, "create table flags_load (a int, b int)")
step("local infile without", plain, "load data local infile '%s' into table flags_load fields terminated by ','" % infile)
step("local infile with", connect(CLIENT.LOCAL_FILES, True), "load data local infile '%s' into table flags_load fields terminated by ','" % infile)
step("loaded", plain, "select count(*) from flags_load")

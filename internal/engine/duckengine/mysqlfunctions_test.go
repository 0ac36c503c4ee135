package duckengine

import (
	"context"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestMySQLFunctionRewrites: a MySQL client's GROUP_CONCAT ... SEPARATOR, DATE_FORMAT,
// DATEDIFF, AVG, CAST AS SIGNED and LIKE as DuckDB reads them; a SHOW's LIKE is left to the
// catalog statement.
func TestMySQLFunctionRewrites(t *testing.T) {
	for in, want := range map[string]string{
		"select group_concat(name order by name separator ';') from t":              "select group_concat(name , ';' order by name ) from t",
		`select GROUP_CONCAT(DISTINCT x SEPARATOR "-") from t`:                      "select GROUP_CONCAT(DISTINCT x , '-') from t",
		"select date_format(d, '%Y-%m-%d %H:%i:%s %M %e'), datediff(a, b)":          "select qf_mysql_date_format(d, '%Y-%m-%d %H:%M:%S %B %-d'), qf_mysql_datediff(a, b)",
		"select avg(qty), avg(distinct qty) from t":                                 "select qf_mysql_avg(qty), avg(distinct qty) from t",
		"select cast(x as signed), cast(y as unsigned integer), convert(z, signed)": "select cast(x as BIGINT), cast(y as UBIGINT), CAST(z AS BIGINT)",
		"select * from t where a like 'x%' and b not like ?":                        "select * from t where a ILIKE 'x%' and b not ILIKE ?",
		"show tables like 'x%'": "show tables like 'x%'",
		"select 7 div 2, a mod b, x from t where `n` regexp 'a' or t.c not rlike ?":       `select 7 // 2, a % b, x from t where regexp_matches("n", 'a', 'i') or NOT regexp_matches(t.c, ?, 'i')`,
		"select date_add(d, interval 1 day), date_sub(now(), interval 2 hour)":            "select qf_mysql_date_add_days(d, interval 1 day), qf_mysql_date_sub_time(CAST(date_trunc('second', timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))) AS TIMESTAMP_S), interval 2 hour)",
		"select timestampdiff(month, a, b), str_to_date(s, '%d/%m/%Y %H:%i'), to_days(d)": "select qf_mysql_timestampdiff('month', a, b), qf_mysql_str_to_date(s, '%d/%m/%Y %H:%M'), qf_mysql_to_days(d)",
		"select str_to_date(s, '%e.%c.%Y'), truncate(x, 2) from t":                        "select qf_mysql_str_to_date_only(s, '%d.%m.%Y'), trunc(x, 2) from t",
		"drop index i on db.t;":           "drop index i ;",
		"insert ignore into t values (1)": "INSERT OR IGNORE INTO t values (1)",
		// ALTER TABLE ... ADD UNIQUE: DuckDB's CREATE UNIQUE INDEX
		"ALTER TABLE `blog_author` ADD CONSTRAINT `blog_author_email_uniq` UNIQUE (`email`);": `CREATE UNIQUE INDEX "blog_author_email_uniq" ON "blog_author" ("email");`,
		"alter table d.t add unique key (a, `b`)":                                             `CREATE UNIQUE INDEX "t_a_key" ON "d"."t" ("a", "b")`,
		"alter table t add constraint unique index i (a)":                                     `CREATE UNIQUE INDEX "i" ON "t" ("a")`,
		"alter table t add unique (a(10))":                                                    "alter table t add unique (a(10))",
		"alter table t add constraint c foreign key (a) references u (b)":                     "alter table t add constraint c foreign key (a) references u (b)",
		// a date's parts, of text too; YEAR and TIME as types left alone
		"select year('2024-03-04'), dayofweek(d), week(d), week(d, 3), week(d, 1), time(x) from t": "select qf_mysql_year('2024-03-04'), qf_mysql_dayofweek(d), qf_mysql_week(d), qf_mysql_week_iso(d), week(d, 1), qf_mysql_time(x) from t",
		"create table t (y year(4), a time(3), b datetime(3), c timestamp)":                        "create table t (y year(4), a time(3), b datetime(3), c timestamp)",
		"select cast(x as time(3)), main.year(d), cast(s as datetime), convert(s, datetime(6))":    "select cast(x as time(3)), main.year(d), cast(s as TIMESTAMP_S), CAST(s AS TIMESTAMP)",
		"select field(s, 'a', concat('b', x)), elt(2, 'a', 'b'), insert(s, 1, 2, 'x'), hex(3.7)":   "select qf_mysql_field(s, [ 'a', (('b') || ( x))]), qf_mysql_elt(2, [ 'a', 'b']), qf_mysql_insert(s, 1, 2, 'x'), qf_mysql_hex(3.7)",
		"select now(3), current_timestamp from t where a > localtime()":                            "select CAST(date_trunc('millisecond', timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))) AS TIMESTAMP_MS), CAST(date_trunc('second', timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))) AS TIMESTAMP_S) from t where a > CAST(date_trunc('second', timezone('UTC', coalesce(getvariable('qf_now'), current_timestamp))) AS TIMESTAMP_S)",
	} {
		if got := mysqlCompat(in); got != want {
			t.Errorf("mysqlCompat(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMySQLLimitedWrites: a MySQL client's UPDATE and DELETE with ORDER BY or LIMIT are run on
// the rows a subquery of the same table picks; others are left as they are.
func TestMySQLLimitedWrites(t *testing.T) {
	for in, want := range map[string]string{
		"DELETE FROM t WHERE a = ? LIMIT 10":                       "DELETE FROM t WHERE rowid IN (SELECT rowid FROM t WHERE a = ? LIMIT 10)",
		"delete from d.t order by id desc limit 1;":                "delete from d.t WHERE rowid IN (SELECT rowid FROM d.t order by id desc limit 1)",
		"UPDATE t AS x SET a = ? WHERE (b) > 1 ORDER BY c LIMIT ?": "UPDATE t AS x SET a = ? WHERE rowid IN (SELECT rowid FROM t WHERE (b) > 1 ORDER BY c LIMIT ?)",
		"UPDATE t SET a = (SELECT max(b) FROM u LIMIT 1)":          "UPDATE t SET a = (SELECT max(b) FROM u LIMIT 1)",
		"DELETE FROM t WHERE a IN (SELECT a FROM u LIMIT 2)":       "DELETE FROM t WHERE a IN (SELECT a FROM u LIMIT 2)",
		"SELECT * FROM t ORDER BY a LIMIT 1":                       "SELECT * FROM t ORDER BY a LIMIT 1",
	} {
		if got := limitedWrite(in); got != want {
			t.Errorf("limitedWrite(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLockingClausesLeftOut: a PostgreSQL or MySQL client's SELECT runs without its locking
// clauses; FOR in other places stays.
func TestLockingClausesLeftOut(t *testing.T) {
	for _, c := range []struct{ protocol, in, want string }{
		{query.ProtocolPostgres, "select id from t where a = $1 for update", "select id from t where a = $1 "},
		{query.ProtocolPostgres, "SELECT * FROM t LIMIT 1 FOR NO KEY UPDATE OF t, s NOWAIT FOR SHARE OF u SKIP LOCKED;", "SELECT * FROM t LIMIT 1 ;"},
		{query.ProtocolPostgres, "select substring(s from 1 for 2) from t for key share", "select substring(s from 1 for 2) from t "},
		{query.ProtocolMySQL, "select id from t where id = 1 lock in share mode", "select id from t where id = 1 "},
		{query.ProtocolMySQL, "SELECT id FROM t FOR UPDATE SKIP LOCKED", "SELECT id FROM t "},
		{query.ProtocolPostgres, "update t set a = 1 where b = 'for update'", "update t set a = 1 where b = 'for update'"},
		{query.ProtocolTrino, "select 1 for update", "select 1 for update"},
	} {
		if got := withoutLocking(&query.Request{SQL: c.in, Protocol: c.protocol}).SQL; got != c.want {
			t.Errorf("%s %q: %q, want %q", c.protocol, c.in, got, c.want)
		}
	}
}

// TestMySQLQualifiedSets: an UPDATE's SET columns lose their table's (or alias's) name, which
// DuckDB refuses; other names stay.
func TestMySQLQualifiedSets(t *testing.T) {
	for in, want := range map[string]string{
		"UPDATE t AS x SET x.a = 1, d.t.b = (SELECT u.c FROM u), c = x.a WHERE x.a = 2": "UPDATE t AS x SET a = 1, b = (SELECT u.c FROM u), c = x.a WHERE x.a = 2",
		"UPDATE t SET a = 1":  "UPDATE t SET a = 1",
		"SELECT x.a FROM t x": "SELECT x.a FROM t x",
	} {
		if got := unqualifiedSets(in); got != want {
			t.Errorf("unqualifiedSets(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMySQLUpdateErrorNamesNoCount: an UPDATE whose value its column refuses fails with that
// error, not quoting the SELECT that counts its rows.
func TestMySQLUpdateErrorNamesNoCount(t *testing.T) {
	e, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, s := range []string{"CREATE TABLE ue (id INTEGER PRIMARY KEY, d DECIMAL(10,2))", "INSERT INTO ue VALUES (1, 1.5)"} {
		rows, err := e.Execute(ctx, &query.Request{SQL: s, Protocol: query.ProtocolMySQL})
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	_, err = e.Execute(ctx, &query.Request{SQL: "UPDATE ue SET d = 'abc' WHERE id = 1", Protocol: query.ProtocolMySQL})
	if err == nil || !strings.Contains(err.Error(), `"abc"`) || strings.Contains(err.Error(), "count(*)") {
		t.Errorf("error %v, want the conversion's, without the count", err)
	}
}

// TestMySQLCompatScanFindsCalls: the cheap scan before mysqlCompat tokenizes a statement finds
// every call mysqlFunctionEdits writes (blanks before its "(" too, as IGNORE_SPACE lets MySQL
// read it), and passes over a prepared INSERT and SELECT (a string literal is tokenized anyway,
// for its escapes).
func TestMySQLCompatScanFindsCalls(t *testing.T) {
	for _, call := range []string{"year(d)", "dayofyear(d)", "month(d)", "dayofmonth(d)", "day(d)", "weekday(d)", "last_day(d)",
		"week(d)", "dayofweek(d)", "quarter(d)", "hour(d)", "minute(d)", "second(d)", "dayname(d)", "monthname(d)", "time(d)",
		"now()", "current_timestamp", "localtime", "sysdate()", "utc_timestamp()", "cast(x as datetime)", "field(s, 'a')",
		"elt(1, 'a')", "insert(s, 1, 2, 'x')", "hex(x)", "bin(x)", "char_length(s)", "YEAR(d)", "Last_Day(d)", "from_unixtime(1)", "hour (d)", "field\n(s, 'a')"} {
		sql := "select " + call + " from t"
		if !mayNeedMySQLCompat(sql) {
			t.Errorf("%s: not scanned", sql)
		}
		if mysqlCompat(sql) == sql {
			t.Errorf("%s: not written", sql)
		}
	}
	for _, sql := range []string{
		"INSERT INTO orders (id, name, price, placed_day, status) VALUES (?, ?, ?, ?, ?)",
		"SELECT id, name, price, placed_at FROM orders WHERE customer_id = ? AND day_count > 2 ORDER BY id LIMIT 100",
	} {
		if mayNeedMySQLCompat(sql) {
			t.Errorf("%s: scanned", sql)
		}
	}
}
